#!/usr/bin/env bash
# Nsight Compute (full set, source counters) on the default kkt_solve (kkt_solve_gva) alone, on the rows given in ROWS ("HEAD:SEQS ..."),
# after the poisoned kernel tests (SKIP_TESTS=1: none); TAG (default empty) is appended to each file's name, so that a
# second run under other settings (e.g. FLASHQLA_KKT_MERGE=mma16) keeps the first one's files. Carry [".device",
# ".device-bins"] (".device-bins" alone is enough: the GPU image has torch and Nsight Compute).
# Read with benchmarks/ncu_source_lines.py (src_<row>.csv.xz) and ncu_details_<row>.txt.
set -uo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit --format=csv > "$R/nvidia-smi.txt"
[ "${SKIP_TESTS:-0}" = 1 ] || kernel_tests; keep
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for row in ${ROWS:-397B-TP1:8192x4 2B-TP1:1024x8}; do
  head=${row%%:*}; seqs=${row##*:}; tag=${head}_${seqs}${TAG:-}
  timeout 150 "$NCU" --clock-control none -k regex:"kkt" --launch-skip 1 --launch-count 1 \
    --set full --import-source yes -o "$R/prof_$tag" python benchmarks/ncu_target.py "$head" "$seqs" \
    > "$R/ncu_run_$tag.log" 2>&1
  tail -1 "$R/ncu_run_$tag.log"
  "$NCU" -i "$R/prof_$tag.ncu-rep" --page details > "$R/ncu_details_$tag.txt" 2>&1
  "$NCU" -i "$R/prof_$tag.ncu-rep" --page source --csv --print-source cuda,sass > "$R/src_$tag.csv" 2>"$R/src_$tag.err"
  xz -T0 "$R/src_$tag.csv"; rm -f "$R/prof_$tag.ncu-rep"
  grep -E "Duration|L1/TEX Cache Throughput|Executed Ipc A|Issue Slots Busy|No Eligible|Achieved Occupancy|Executed Instructions  " "$R/ncu_details_$tag.txt" | head -10
  keep
done
