#!/usr/bin/env bash
# Host overhead per call (before / after, when OLD_EXT names a copy of the previous torch-ext), the kernel
# tests (correctness gate), the compile test on the kernels, the small rows.
# On the GPU machine (carry .device and .device-bins):  bash benchmarks/device_host.sh
set -uo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$R/nvidia-smi.txt"
if [ -n "${OLD_EXT:-}" ] && [ -d "$OLD_EXT" ]; then
  PYTHONPATH=$PWD/$OLD_EXT:$PYTHONPATH timeout 120 python benchmarks/host_overhead.py --tag before --profile \
    --out "$R/host_before.json" 2>&1 | grep -v Warn
fi
timeout 120 python benchmarks/host_overhead.py --tag after --profile --out "$R/host_after.json" 2>&1 | grep -v Warn
keep
kernel_tests
keep
compile_test
keep
