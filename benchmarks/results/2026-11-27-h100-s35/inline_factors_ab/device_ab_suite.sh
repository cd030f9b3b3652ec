#!/usr/bin/env bash
# A timeline A/B of two builds (old = .device-bins-old, new = .device-bins; ROWS, VARIANTS as device_kkt_variants.sh
# takes them), then the whole GPU suite on the new build. Carry .device, .device-bins, .device-bins-old.
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
bash benchmarks/device_kkt_variants.sh
keep
gpu_tests ${GPU_TESTS_TIMEOUT:-420}
keep
