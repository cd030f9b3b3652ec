#!/usr/bin/env bash
# kkt_solve per merge variant: errors against float64 (benchmarks/accuracy.py, flashqla alone, 3 seeds), then Nsight
# Compute with source counters on one kkt_solve launch of ROW (default the reference row) per variant.
# MERGES="mma mma16" (FLASHQLA_KKT_MERGE values); SKIP_ACCURACY=1 profiles only. Carry [".device", ".device-bins"]. Read the sources with
# benchmarks/ncu_source_lines.py src_<merge>.csv build/_binaries/<kkt spec>.cu kkt_solve.
set -uo pipefail
source benchmarks/device_env.sh
MERGES=${MERGES:-"mma mma16"}
ROW=${ROW:-"397B-TP1 8192x4"}
for m in $MERGES; do
  [ "${SKIP_ACCURACY:-0}" = 1 ] && break
  FLASHQLA_KKT_MERGE=$m timeout 120 python benchmarks/accuracy.py --libs flashqla --seeds 31,32,33 \
    --out "$R/accuracy_$m.json" > "$R/accuracy_$m.log" 2>&1; tail -4 "$R/accuracy_$m.log"
done
keep
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for m in $MERGES; do
  FLASHQLA_KKT_MERGE=$m NCU_REPEATS=2 timeout 150 "$NCU" --clock-control none -k regex:kkt --launch-skip 1 \
    --launch-count 1 --set full --import-source yes -o "$R/prof_$m" python benchmarks/ncu_target.py $ROW \
    > "$R/ncu_run_$m.log" 2>&1
  tail -1 "$R/ncu_run_$m.log"
  "$NCU" -i "$R/prof_$m.ncu-rep" --page details > "$R/ncu_details_$m.txt" 2>&1
  "$NCU" -i "$R/prof_$m.ncu-rep" --page source --csv --print-source cuda,sass > "$R/src_$m.csv" 2>"$R/src_$m.err"
  xz -T0 "$R/src_$m.csv"; rm -f "$R/prof_$m.ncu-rep"
  grep -E "^    Duration|Executed Instructions  |Issue Slots Busy|L1/TEX Cache Throughput|No Eligible|Achieved Occupancy" \
    "$R/ncu_details_$m.txt" | head -8 | sed "s/^/[$m] /"
  keep
done
