#!/usr/bin/env bash
# kkt_solve_gva's A~ straight from registers (a_store "rows", new) against the TMA store through shared memory
# (old): outputs bit for bit (benchmarks/bitwise_ab.py in each build), the fused-forward kernel tests on the new
# build, then the timeline of both, interleaved twice. Carry .device-lean (unpacked by the caller), .device-bins,
# .device-bins-old.
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
old() { env PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries "$@"; }
new() { env "$@"; }
old timeout 120 python benchmarks/bitwise_ab.py --out "$R/hashes_old.json" > /dev/null 2>&1
timeout 120 python benchmarks/bitwise_ab.py --out "$R/hashes_new.json" > /dev/null 2>&1
cmp -s "$R/hashes_old.json" "$R/hashes_new.json" && echo "bitwise: equal" || echo "bitwise: DIFFERENT"
kernel_tests 200; keep
ROWS=${ROWS:-2B-TP1/1024x8,2B-TP1/8192x4,35B-TP1/1024x8,35B-TP1/8192x4,27B-TP1/1024x8,397B-TP1/8192x4,397B-TP4/1024x8}
for pass in "" 2; do
  for v in old new; do
    $v FLASHQLA_FUSED_INVERSE=0 timeout 100 python benchmarks/timeline.py --rows "$ROWS" \
      --out "$R/timeline_$v$pass.json" > /dev/null 2>&1
    timeline_line "$R/timeline_$v$pass.json" "$v$pass"
    keep
  done
done
