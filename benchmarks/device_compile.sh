#!/usr/bin/env bash
# One device call for issue 4's compile readiness, then the usual gate: the torch.compile tests on the
# kernels first (fast feedback), the quick rows, then the whole GPU suite.
# On the GPU machine (carry .device and .device-bins):  bash benchmarks/device_compile.sh
set -uo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$R/nvidia-smi.txt"
timeout 240 python -m pytest -q -m gpu -p no:cacheprovider -rA tests/test_layers_compile_gpu.py \
  > "$R/compile_tests.log" 2>&1; grep -E "passed|failed|Error|assert" "$R/compile_tests.log" | tail -8
keep
quick_rows
keep
gpu_tests ${GPU_TESTS_TIMEOUT:-330}
keep
