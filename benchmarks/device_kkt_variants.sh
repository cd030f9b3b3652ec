#!/usr/bin/env bash
# kkt_solve's variants on ROWS (default: the GVA-1 rows of 2B-TP1) by the timeline (benchmarks/timeline.py,
# torch.profiler, L2 flushed): each "pack:merge" of VARIANTS (pack old = .device-bins-old, new = .device-bins;
# merge = FLASHQLA_KKT_MERGE), interleaved twice. Carry .device-bins and .device-bins-old.
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
ROWS=${ROWS:-2B-TP1/1024x8,2B-TP1/8192x4,2B-TP1/16384+16384,2B-TP1/1x8192,2B-TP1/1x32768}
VARIANTS=${VARIANTS:-old:auto new:auto new:gva}
old() { env PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries "$@"; }
new() { env "$@"; }
for pass in "" 2; do
  for vm in $VARIANTS; do
    v=${vm%%:*}; m=${vm#*:}
    $v FLASHQLA_KKT_MERGE=$m timeout 90 python benchmarks/timeline.py --rows "$ROWS" --out "$R/timeline_${v}_$m$pass.json" \
      > /dev/null 2>&1
    timeline_line "$R/timeline_${v}_$m$pass.json" "${v}_$m$pass"
    keep
  done
done
