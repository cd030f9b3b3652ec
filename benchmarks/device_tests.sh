#!/usr/bin/env bash
# The whole GPU test suite in a call of its own (poisoned outputs, SASS checks, compile tests on the kernels).
# On the GPU machine (carry .device and .device-bins):  bash benchmarks/device_tests.sh
set -uo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/nvidia-smi.txt"
gpu_tests ${GPU_TESTS_TIMEOUT:-540}
keep
