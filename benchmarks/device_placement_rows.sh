#!/usr/bin/env bash
# FlashInfer and flashqla on the rows where FlashInfer leads, each row at PLACEMENTS memory placements
# (bench_prefill.py --placements): the third of the FlashInfer calls (after `SKIP_TESTS=1 SKIP_LAYERS=1 bash
# benchmarks/device_fi1.sh` and the copy call, as for benchmarks/device_fi3.sh).
# Carry [".device-fi/cdsl.part.ab", ".device-bins"] on the machine warm from the first two calls.
set -uo pipefail
cat /tmp/stage/cdsl.part.aa .device-fi/cdsl.part.ab | xz -d | tar -C /tmp/site -xf - && rm -f /tmp/stage/cdsl.part.aa
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/nvidia-smi.txt"
ROWS=${ROWS:-397B-TP1/16384+16384,397B-TP1/8192x4,397B-TP1/1024x8,397B-TP2/8192x4,397B-TP2/1024x8,27B-TP1/16384+16384,27B-TP1/8192x4,27B-TP1/1024x8,27B-TP2/8192x4,27B-TP2/1024x8,35B-TP1/8192x4,35B-TP1/1024x8,2B-TP1/1024x8}
warm_up
for lib in flashinfer flashqla; do
  timeout 280 python benchmarks/bench_prefill.py --lib $lib --rows "$ROWS" --rep 40 --placements ${PLACEMENTS:-5} \
    --out "$R/bench_$lib.json" 2>&1 | grep -E "^$lib "
  keep
done
