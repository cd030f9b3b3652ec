#!/usr/bin/env bash
# First of the three back-to-back FlashInfer calls: unpack FlashInfer, then (while the machine is held)
# the whole GPU test suite (unless SKIP_TESTS=1: it takes ~6 min with the compile tests, so it may run in a
# call of its own, `bash benchmarks/device_tests.sh`), the GDN layer stack (prefill and decode step) for
# flashqla and FLA's Triton kernels side by side, the host time per forward call (SKIP_LAYERS=1: tests only; ACCURACY=1 adds benchmarks/accuracy.py).
# Carry [".device", ".device-fi/fi.tar.xz", ".device-bins"].
set -uo pipefail
source .device/bootstrap.sh && tar -C /tmp/site -xJf .device-fi/fi.tar.xz
source benchmarks/device_env.sh
[ "${SKIP_TESTS:-0}" = 1 ] || { gpu_tests 420; keep; }
if [ "${ACCURACY:-0}" = 1 ]; then  # flashqla and FlashQLA against the float64 recurrence
  timeout 170 python benchmarks/accuracy.py --out "$R/accuracy.json" 2>&1 | grep -v Warn | grep -E "^(1x|ragged)" | cut -c1-300
  keep
fi
[ "${SKIP_LAYERS:-0}" = 1 ] && exit 0
layers_side_by_side 32768; keep
layers_side_by_side "512 --decode-only"; keep
timeout 100 python benchmarks/host_overhead.py --tag now --out "$R/host_overhead.json" 2>&1 | grep -v Warn; keep
