#!/usr/bin/env bash
# v5 (chunk_fwd_wy.py) against v4 in one call: poisoned kernel tests on v5, the rows of the V-block check plus
# the single-sequence ones timed w / wy / w / wy (interleaved: drift shows), errors against float64 of both.
# On the GPU machine (carry .device and .device-bins):  bash benchmarks/device_wy.sh
set -uo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/nvidia-smi.txt"
FLASHQLA_CHUNK_CHAIN=wy FLASHQLA_POISON=1 timeout 150 python -m pytest -q -m gpu -p no:cacheprovider \
  tests/test_gpu_kernels.py > "$R/kernel_tests_wy.log" 2>&1; tail -2 "$R/kernel_tests_wy.log"; keep
ROWS=${ROWS:-397B-TP1/8192x4,35B-TP1/8192x4,397B-TP2/8192x4,27B-TP1/16384+16384,397B-TP1/1024x8,2B-TP1/1024x8,397B-TP8/1024x8,397B-TP8/1x8192,27B-TP1/1x32768,397B-TP1/1x2048}
for variant in w wy w2 wy2; do
  FLASHQLA_CHUNK_CHAIN=${variant%2} timeout 120 python benchmarks/bench_prefill.py --lib flashqla --rows "$ROWS" \
    --rep 50 --breakdown --out "$R/chain_$variant.json" 2>&1 | grep -v Warn | sed "s/^/[$variant] /"
  keep
done
timeout 150 python benchmarks/accuracy.py --chains w,wy --no-flash-qla --out "$R/accuracy.json" 2>&1 | grep -v Warn
keep
