#!/usr/bin/env bash
# Nsight Compute section metrics (no source counters) of one kernel (KERNEL, regex; default chunk_fwd) on one row
# (ROW="head seqs", default the reference row) under each runtime setting of VARIANTS ("name=VAR=value[,...]",
# name= alone: the defaults), side by side: duration, issue, pipes, shared-memory wavefronts, warp states.
# Carry [".device", ".device-bins"].
set -uo pipefail
source benchmarks/device_env.sh
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
ROW=${ROW:-397B-TP1 8192x4}
for spec in $VARIANTS; do
  name=${spec%%=*}
  env $(echo "${spec#*=}" | tr ',' ' ') NCU_REPEATS=2 timeout 240 "$NCU" --clock-control none -k regex:"${KERNEL:-chunk_fwd}" \
    --launch-skip 1 --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section SchedulerStats \
    --section WarpStateStats --section InstructionStats \
    --metrics l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes.sum \
    python benchmarks/ncu_target.py $ROW > "$R/ncu_$name.txt" 2>&1
  grep -E "Duration|Issue Slots Busy|No Eligible|l1tex__data_pipe_lsu_wavefronts_mem_shared.sum|bank_conflicts|smsp__inst_executed.sum|gmma_cycles|pipe_shared_cycles|dram__bytes|Shared Memory  *%|Warp Cycles Per Issued" "$R/ncu_$name.txt" | sed "s/^/[$name] /"
  keep
done
