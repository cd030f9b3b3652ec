#!/usr/bin/env bash
# kkt_solve_gva's persistent grid (FLASHQLA_KKT_PERSISTENT=1, A~ by TMA at 4 CTAs an SM or from registers at 5)
# against its one-item CTAs: the kkt and forward GPU tests on poisoned outputs first (bitwise against the one-item
# CTAs, and float64), then the timeline of each on ROWS, two interleaved passes. Carry .device-lean, .device-bins,
# .device-bins-old (any build).
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
FLASHQLA_POISON=1 timeout 240 python -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py \
  -k "persistent_agrees or persistent_kkt or kkt_solve_matches or gva_grid_orders or kkt_slot_orders" \
  > "$R/persistent_tests.log" 2>&1; tail -3 "$R/persistent_tests.log"
keep
export ROWS=${ROWS:-2B-TP1/1024x8,35B-TP1/1024x8,35B-TP1/8192x4,27B-TP1/1024x8,2B-TP1/8192x4}
export VARIANTS=${VARIANTS:-"new:FLASHQLA_KKT_PERSISTENT=0 new:FLASHQLA_KKT_PERSISTENT=1,FLASHQLA_KKT_ASTORE=tma new:FLASHQLA_KKT_PERSISTENT=1,FLASHQLA_KKT_ASTORE=rows"}
bash benchmarks/device_kkt_variants.sh
keep
