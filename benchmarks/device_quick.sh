#!/usr/bin/env bash
# The shortest kernel-iteration call: kernel tests on poisoned outputs, then flashqla's quick rows with the
# kkt_solve time alone. Carry [".device", ".device-bins"].
set -uo pipefail
source benchmarks/device_env.sh
R=$OUT/r; mkdir -p "$R"; keep() { tar czf "$OUT/results.tar.gz" -C "$OUT" r; }
FLASHQLA_POISON=1 timeout 120 python -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py \
  > "$R/kernel_tests.log" 2>&1; tail -2 "$R/kernel_tests.log"
timeout 120 python benchmarks/bench_prefill.py --lib flashqla --rows quick --rep 50 --breakdown \
  --out "$R/quick_flashqla.json" 2>&1 | grep -v Warn
keep
