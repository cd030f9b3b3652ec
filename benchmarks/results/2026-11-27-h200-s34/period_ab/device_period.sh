#!/usr/bin/env bash
# The fused variant's inverse period (FLASHQLA_INVERSE_PERIOD) against the split path and the old fused binary,
# by the timeline (benchmarks/timeline.py), on ROWS; kkt_solve alone on the chunks it would still invert
# (FLASHQLA_KKT_SKIP_FORMED=1, wrong outputs: timing only). Carry .device-bins, .device-bins-old.
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
FLASHQLA_POISON=1 timeout 150 python -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py \
  -k "inverse_period or fused_inverse or chunk_forward_matches_float64" > "$R/period_tests.log" 2>&1
tail -3 "$R/period_tests.log"; keep
ROWS=${ROWS:-2B-TP1/1024x8,35B-TP1/1024x8,35B-TP1/8192x4,2B-TP1/8192x4}
VARIANTS=${VARIANTS:-"new:FLASHQLA_FUSED_INVERSE=0 old:FLASHQLA_FUSED_INVERSE=1 new:FLASHQLA_FUSED_INVERSE=1 new:FLASHQLA_FUSED_INVERSE=1,FLASHQLA_INVERSE_PERIOD=2 new:FLASHQLA_FUSED_INVERSE=1,FLASHQLA_INVERSE_PERIOD=3 new:FLASHQLA_FUSED_INVERSE=1,FLASHQLA_INVERSE_PERIOD=4"}
SKIPS=${SKIPS:-"2 3 4"}
old() { env PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries "$@"; }
new() { env "$@"; }
for pass in "" 2; do
  for vm in $VARIANTS; do
    v=${vm%%:*}; m=${vm#*:}
    envs=$(echo "$m" | tr ',' ' '); tag=$(echo "$m" | sed 's/FLASHQLA_//g; s/[=,]/-/g')
    $v $envs timeout 90 python benchmarks/timeline.py --rows "$ROWS" --out "$R/timeline_${v}_$tag$pass.json" > /dev/null 2>&1
    timeline_line "$R/timeline_${v}_$tag$pass.json" "${v}_$tag$pass"
    keep
  done
done
for p in $SKIPS; do
  env FLASHQLA_FUSED_INVERSE=1 FLASHQLA_INVERSE_PERIOD=$p FLASHQLA_KKT_SKIP_FORMED=1 timeout 90 python benchmarks/timeline.py \
    --rows "$ROWS" --out "$R/timeline_skip$p.json" > /dev/null 2>&1
  timeline_line "$R/timeline_skip$p.json" "skip$p"
  keep
done
