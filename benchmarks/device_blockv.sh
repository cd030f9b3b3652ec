#!/usr/bin/env bash
# V-block rule check: the rows whose choice the rule decides (SMs/2 < pairs < SMs with long sequences; short
# sequences), auto vs forced 64 / 128, auto again at the end (run-to-run variance); then the compile test.
# On the GPU machine (carry .device and .device-bins):  bash benchmarks/device_blockv.sh
set -uo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$R/nvidia-smi.txt"
ROWS=35B-TP1/8192x4,397B-TP2/8192x4,27B-TP2/8192x4,27B-TP1/16384+16384,397B-TP1/16384+16384,2B-TP1/1024x8,397B-TP4/1024x8,397B-TP8/1024x8,35B-TP1/1024x8,397B-TP1/8192x4
for variant in auto 64 128 auto2; do
  env $(case $variant in 64|128) echo FLASHQLA_BLOCK_V=$variant;; esac) timeout 150 \
    python benchmarks/bench_prefill.py --lib flashqla --rows "$ROWS" --rep 50 --breakdown \
    --out "$R/bv_$variant.json" 2>&1 | grep -v Warn | sed "s/^/[$variant] /"
  keep
done
compile_test
keep
