#!/usr/bin/env bash
# kkt_solve per merge variant: errors against float64 (benchmarks/accuracy.py, flashqla alone, 3 seeds), then Nsight
# Compute with source counters on one kkt_solve launch of ROW (default the reference row) per variant.
# MERGES="mma mma16" (FLASHQLA_KKT_MERGE values); SKIP_ACCURACY=1 profiles only. Carry [".device", ".device-bins"]. Read the sources with
# benchmarks/ncu_source_lines.py src_<head>_<seqs>_<merge>.csv build/_binaries/<kkt spec>.cu kkt_solve.
set -uo pipefail
source benchmarks/device_env.sh
MERGES=${MERGES:-"mma mma16"}
ROW=${ROW:-"397B-TP1 8192x4"}  # "HEAD SEQS"
for m in $MERGES; do
  [ "${SKIP_ACCURACY:-0}" = 1 ] && break
  FLASHQLA_KKT_MERGE=$m timeout 120 python benchmarks/accuracy.py --libs flashqla --seeds 31,32,33 \
    --out "$R/accuracy_$m.json" > "$R/accuracy_$m.log" 2>&1; tail -4 "$R/accuracy_$m.log"
done
keep
for m in $MERGES; do  # the profile of each variant by device_ncu_src.sh (files src_<head>_<seqs>_<merge>.csv.xz)
  ENV="FLASHQLA_KKT_MERGE=$m NCU_REPEATS=2" KERNEL=kkt ROWS="${ROW// /:}" TAG=_$m bash benchmarks/device_ncu_src.sh
done
