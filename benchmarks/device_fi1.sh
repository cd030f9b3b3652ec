#!/usr/bin/env bash
# First of the three back-to-back FlashInfer calls: unpack FlashInfer, then (while the machine is held)
# the whole GPU test suite, the GDN layer stack (prefill and decode step) for flashqla and FLA's Triton
# kernels side by side. Carry [".device", ".device-fi/fi.tar.xz", ".device-bins"].
set -uo pipefail
source .device/bootstrap.sh && tar -C /tmp/site -xJf .device-fi/fi.tar.xz
source benchmarks/device_env.sh
gpu_tests 280; keep
layers_side_by_side 32768; keep
layers_side_by_side "512 --decode-only"; keep
