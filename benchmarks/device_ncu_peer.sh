#!/usr/bin/env bash
# Nsight Compute (full set) of one forward of FlashInfer and of flashqla (split path, and the fused variant forced) on
# the same rows (ROWS, "HEAD:SEQS ..."), every kernel of the call (NVTX range "target" of ncu_target.py): what each
# library's kernels execute (instructions, issue slots, pipes, shared-memory wavefronts, stalls) for the same work.
# The third of three back-to-back calls on one warm machine (session 37, results/2026-11-27-h200-s37/README.md):
#   1. carry .device-fi/cdsl.part.aa: mkdir -p /tmp/site /tmp/stage && cp .device-fi/cdsl.part.aa /tmp/stage/
#   2. carry .device-fi/cdsl.part.ab: cat /tmp/stage/cdsl.part.aa .device-fi/cdsl.part.ab | xz -d | tar -C /tmp/site -xf -
#      && rm -f /tmp/stage/cdsl.part.aa
#   3. carry .device-fi/fi.tar.xz, .device-tvm (apache-tvm-ffi 0.1.12, which FlashInfer imports), .device-lean and
#      .device-bins: tar -C /tmp/site -xJf .device-fi/fi.tar.xz && tar -C /tmp/site -xJf .device-tvm/site.tar.xz &&
#      bash benchmarks/device_ncu_peer.sh
# LIBS (default "flashinfer:0 flashqla:0 flashqla:1"): library:FLASHQLA_FUSED_INVERSE pairs.
set -uo pipefail
tar -C /tmp/site -xJf .device-lean/site.tar.xz
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit --format=csv > "$R/nvidia-smi.txt"
python -c "import torch, flashinfer; print('torch', torch.__version__, 'flashinfer', flashinfer.__version__)" > "$R/versions.txt" 2>&1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for row in ${ROWS:-2B-TP1:1024x8 35B-TP1:8192x4}; do
  head=${row%%:*}; seqs=${row##*:}
  for v in ${LIBS:-flashinfer:0 flashqla:0 flashqla:1}; do
    lib=${v%%:*}; fused=${v##*:}; tag=${lib}_f${fused}_${head}_${seqs}
    NCU_LIB=$lib FLASHQLA_FUSED_INVERSE=$fused timeout 240 "$NCU" --clock-control none --nvtx --nvtx-include "target/" \
      --set full -o "$R/prof_$tag" python benchmarks/ncu_target.py "$head" "$seqs" > "$R/ncu_run_$tag.log" 2>&1
    tail -1 "$R/ncu_run_$tag.log"
    "$NCU" -i "$R/prof_$tag.ncu-rep" --page details > "$R/ncu_details_$tag.txt" 2>&1
    "$NCU" -i "$R/prof_$tag.ncu-rep" --page raw --csv > "$R/ncu_raw_$tag.csv" 2>&1 && xz -T0 "$R/ncu_raw_$tag.csv"
    rm -f "$R/prof_$tag.ncu-rep"
    grep -E "^  [a-zA-Z_].*\(|Duration|Executed Instructions  |Issue Slots Busy|Executed Ipc A|Shared Memory|L1/TEX Cache Throughput|DRAM Throughput" \
      "$R/ncu_details_$tag.txt" | grep -v -i "warning" | head -24
    keep
  done
done
