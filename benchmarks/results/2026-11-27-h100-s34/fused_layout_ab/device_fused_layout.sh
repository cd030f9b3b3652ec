#!/usr/bin/env bash
# chunk_fwd's fused-inverse variant with A~'s tile in a_tile_layout (new) against TileLang's layout (old) and the
# split path, by the timeline, two passes interleaved; the kernel tests of the fused variant first.
# Carry .device-lean (unpacked to /tmp/site by the caller), .device-bins, .device-bins-old.
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
FLASHQLA_POISON=1 timeout 150 python -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py \
  -k "fused_inverse or chunk_forward_matches_float64 or deterministic or graph" > "$R/fused_tests.log" 2>&1
tail -2 "$R/fused_tests.log"; keep
ROWS=${ROWS:-2B-TP1/1024x8,2B-TP1/2048x8,35B-TP1/1024x8,35B-TP1/8192x4,27B-TP1/1024x8}
old() { env PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries "$@"; }
new() { env "$@"; }
for pass in "" 2; do
  for vm in new:0 old:1 new:1; do
    v=${vm%%:*}; f=${vm#*:}
    $v FLASHQLA_FUSED_INVERSE=$f timeout 90 python benchmarks/timeline.py --rows "$ROWS" \
      --out "$R/timeline_${v}_fused$f$pass.json" > /dev/null 2>&1
    timeline_line "$R/timeline_${v}_fused$f$pass.json" "${v}_fused$f$pass"
    keep
  done
done
