#!/usr/bin/env bash
# A/B of kernel durations (benchmarks/timeline.py: torch.profiler, L2 flushed, ~1% scatter between calls) of the
# new build (.device-bins) against the baseline (.device-bins-old): poisoned kernel tests of the new build, output
# hashes of all (benchmarks/bitwise_ab.py), then the timeline of ROWS as old / new (/ alt) twice. With a third pack in
# .device-bins-alt (a variant whose kernel tests passed before) it runs as "alt", imported as its own package.
# Carry [".device-bins", ".device-bins-old"] and, if used, ".device-bins-alt" (the GPU image has torch, triton and
# pytest).
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
kernel_tests ${TEST_LIMIT:-150}
if ! grep -qE "[0-9]+ passed" "$R/kernel_tests.log" || grep -qE "[0-9]+ (failed|error)|Timeout|timed out" "$R/kernel_tests.log"; then
  echo "kernel tests did not pass: no timing"; tail -30 "$R/kernel_tests.log"; keep; exit 3
fi
# each variant is a command prefix that selects its package and binaries
new() { env "$@"; }
old() { env PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries "$@"; }
alt() { env PYTHONPATH=/tmp/altpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/alt/torch-cuda/_binaries "$@"; }
VS="old new"
if [ -f .device-bins-alt/torch-cuda.tar.xz ]; then
  rm -rf /tmp/alt && mkdir -p /tmp/alt /tmp/altpkg && tar xJf .device-bins-alt/torch-cuda.tar.xz -C /tmp/alt
  ln -sfn /tmp/alt/torch-cuda /tmp/altpkg/flashqla; VS="old new alt"
fi
for v in $VS; do
  $v FLASHQLA_BLOCK_V=128 timeout 60 python benchmarks/bitwise_ab.py --out "$R/hash128_$v.json" > /dev/null 2>&1
  $v timeout 60 python benchmarks/bitwise_ab.py --out "$R/hash_$v.json" > /dev/null 2>&1
done
md5sum "$R"/hash*.json | sed "s#$R/##" | sort | tee "$R/hashes.md5"
keep
ROWS=${ROWS:-397B-TP1/1024x8,27B-TP1/1024x8,397B-TP2/1024x8,35B-TP1/1024x8,397B-TP1/8192x4,2B-TP1/1024x8,397B-TP4/1024x8,35B-TP1/8192x4}
for pass in "" 2; do
  for v in $VS; do
    $v timeout 90 python benchmarks/timeline.py --rows "$ROWS" --out "$R/timeline_$v$pass.json" > /dev/null 2>&1
    timeline_line "$R/timeline_$v$pass.json" "$v$pass"
    keep
  done
done
