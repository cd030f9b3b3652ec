#!/usr/bin/env bash
# A/B of the benchmark's own timing (bench_prefill.py: CUDA events, L2 flushed, median over PLACEMENTS memory
# placements) of the new build (.device-bins) against the baseline (.device-bins-old) on ROWS, old / new alternating
# PASSES times, one machine. Complements device_timeline_ab.sh (kernel durations) where the two disagree across
# machines. Carry [".device-bins", ".device-bins-old"].
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
new() { env "$@"; }
old() { env PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries "$@"; }
ROWS=${ROWS:-397B-TP1/8192x4,397B-TP1/16384+16384,35B-TP1/8192x4,27B-TP1/1024x8,397B-TP1/1024x8}
warm_up
for pass in $(seq 1 ${PASSES:-2}); do
  for v in old new; do
    $v timeout 120 python benchmarks/bench_prefill.py --lib flashqla --rows "$ROWS" --rep 40 \
      --placements ${PLACEMENTS:-3} --out "$R/bench_${v}_$pass.json" 2>&1 | grep -E "^flashqla " | sed "s/^/$v$pass /"
    keep
  done
done
