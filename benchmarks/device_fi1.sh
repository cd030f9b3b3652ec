#!/usr/bin/env bash
# First of the three back-to-back FlashInfer calls: unpack FlashInfer, then (while the machine is held)
# the whole GPU test suite, the GDN layer stack (prefill and decode step) for flashqla and FLA's Triton
# kernels side by side. Carry [".device", ".device-fi/fi.tar.xz", ".device-bins"].
set -uo pipefail
source .device/bootstrap.sh && tar -C /tmp/site -xJf .device-fi/fi.tar.xz
source benchmarks/device_env.sh
R=$OUT/r; mkdir -p "$R"; keep() { tar czf "$OUT/results.tar.gz" -C "$OUT" r; }
timeout 280 python tests/gpu_entry.py --out "$R/gpu_tests.json" --gpu-only > "$R/gpu_tests.log" 2>&1
grep -E "^(FAILED|ERROR)|passed|failed" "$R/gpu_tests.log" | tail -8
keep
timeout 80 python benchmarks/bench_layers.py flashqla 32768 --out "$R/layers_flashqla.json" 2>&1 | tail -1
FLA_FLASH_QLA=0 timeout 100 python benchmarks/bench_layers.py fla 32768 --out "$R/layers_fla.json" 2>&1 | tail -1
keep
timeout 50 python benchmarks/bench_layers.py flashqla 512 --decode-only --out "$R/decode_flashqla.json" 2>&1 | tail -1
FLA_FLASH_QLA=0 timeout 60 python benchmarks/bench_layers.py fla 512 --decode-only --out "$R/decode_fla.json" 2>&1 | tail -1
keep
