#!/usr/bin/env bash
# Which part of the V-block-64 slowdown after d80d852 comes from lowering without TileLang's fence pass:
# this build (.device-bins), the same kernels with the fence pass at V block 64 (.device-bins-alt, kernel tests
# first) and this build forced to V block 128 (FLASHQLA_BLOCK_V=128), interleaved twice on the V-block-64 rows.
# Carry [".device", ".device-bins", ".device-bins-alt"].
set -uo pipefail
source benchmarks/device_env.sh
rm -rf /tmp/alt && mkdir -p /tmp/alt && tar xJf .device-bins-alt/torch-cuda.tar.xz -C /tmp/alt
FLASHQLA_BINARIES_DIR=/tmp/alt/torch-cuda/_binaries kernel_tests 150; keep
ROWS=${ROWS:-27B-TP1/1x32768,397B-TP1/1x32768,397B-TP2/16384+16384,397B-TP1/1x8192,397B-TP8/1x8192,2B-TP1/1024x8}
warm_up
for variant in head alt bv128 head2 alt2 bv128_2; do
  bins=$FLASHQLA_BINARIES_DIR; extra=
  case $variant in alt*) bins=/tmp/alt/torch-cuda/_binaries;; bv128*) extra=FLASHQLA_BLOCK_V=128;; esac
  env $extra FLASHQLA_BINARIES_DIR=$bins timeout 120 python benchmarks/bench_prefill.py --lib flashqla --rows "$ROWS" \
    --rep 50 --breakdown --out "$R/bv_$variant.json" 2>&1 | grep -E "reference|^flashqla" | sed "s/^/[$variant] /"
  keep
done
