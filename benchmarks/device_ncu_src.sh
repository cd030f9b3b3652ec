#!/usr/bin/env bash
# Nsight Compute (full set, source counters) of one flashqla kernel (KERNEL, a regex; default chunk_fwd) on each row of
# ROWS ("HEAD:SEQS ..."), under the extra environment of ENV (e.g. "FLASHQLA_FUSED_INVERSE=1"): details and the source
# page (CUDA and SASS, per-instruction executions and warp samples). Read with benchmarks/ncu_source_lines.py against
# build/_binaries/<spec>.cu; TAG (default empty) is appended to each file's name. Carry .device-lean and .device-bins;
# start with `mkdir -p /tmp/site && tar -C /tmp/site -xJf .device-lean/site.tar.xz` (device_ncu_kkt_rows.sh calls it).
set -uo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit --format=csv > "$R/nvidia-smi.txt"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for row in ${ROWS:-2B-TP1:1024x8}; do
  head=${row%%:*}; seqs=${row##*:}; tag=${head}_${seqs}${TAG:-}
  env ${ENV:-} timeout 200 "$NCU" --clock-control none -k regex:"${KERNEL:-chunk_fwd}" --launch-skip 1 --launch-count 1 \
    --set full --import-source yes -o "$R/prof_$tag" python benchmarks/ncu_target.py "$head" "$seqs" \
    > "$R/ncu_run_$tag.log" 2>&1
  tail -1 "$R/ncu_run_$tag.log"
  "$NCU" -i "$R/prof_$tag.ncu-rep" --page details > "$R/ncu_details_$tag.txt" 2>&1
  "$NCU" -i "$R/prof_$tag.ncu-rep" --page source --csv --print-source cuda,sass > "$R/src_$tag.csv" 2>"$R/src_$tag.err"
  xz -T0 "$R/src_$tag.csv"; rm -f "$R/prof_$tag.ncu-rep"
  grep -E "Duration|L1/TEX Cache Throughput|Executed Ipc A|Issue Slots Busy|No Eligible|Achieved Occupancy|Executed Instructions  " \
    "$R/ncu_details_$tag.txt" | head -10
  keep
done
