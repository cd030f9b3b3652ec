#!/usr/bin/env bash
# First of the three back-to-back FlashInfer calls: unpack FlashInfer, then (while the machine is held)
# the kernel tests, flashqla's quick rows, and the accuracy comparison with FlashQLA (which JIT-compiles).
# Carry [".device", ".device-fi/fi.tar.xz", ".device-bins"].
set -uo pipefail
source .device/bootstrap.sh && tar -C /tmp/site -xJf .device-fi/fi.tar.xz
source benchmarks/device_env.sh
R=$OUT/r; mkdir -p "$R"; keep() { tar czf "$OUT/results.tar.gz" -C "$OUT" r; }
FLASHQLA_POISON=1 timeout 100 python -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py \
  > "$R/kernel_tests.log" 2>&1; tail -1 "$R/kernel_tests.log"
timeout 80 python benchmarks/bench_prefill.py --lib flashqla --rows quick --rep 50 --breakdown \
  --out "$R/quick_flashqla.json" 2>&1 | grep -v Warn
timeout 90 python benchmarks/bench_layers.py flashqla 32768 --out "$R/layers_flashqla.json" 2>&1 | tail -1
keep
timeout 300 python benchmarks/accuracy.py --out "$R/accuracy.json" 2>&1 | grep -v Warn | grep -E "^(1x|ragged)" | cut -c1-300
keep
