#!/usr/bin/env bash
# The shortest kernel-iteration call: kernel tests on poisoned outputs, then flashqla's quick rows with the
# kkt_solve time alone. Carry [".device", ".device-bins"].
set -uo pipefail
source benchmarks/device_env.sh
kernel_tests
quick_rows
keep
