#!/usr/bin/env bash
# factor_rows (FLASHQLA_ROWS_PASS=warps) against kkt_solve's rows-only pass under the fused-inverse chunk_fwd: its two
# GPU tests first (bitwise against kkt_solve's rows and the fused forward), then the timeline of both passes and of
# the split path (FLASHQLA_FUSED_INVERSE=0) on ROWS, two interleaved passes. One build: carry .device-lean and
# .device-bins (and .device-bins-old, which unpack_baseline requires; any build).
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
FLASHQLA_POISON=1 timeout 180 python -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py \
  -k "factor_rows or kkt_rows or fused_inverse_equals" > "$R/rows_tests.log" 2>&1; tail -2 "$R/rows_tests.log"
keep
export ROWS=${ROWS:-2B-TP1/1024x8,35B-TP1/1024x4,35B-TP1/8192x4,35B-TP1/1024x8}
export VARIANTS=${VARIANTS:-"new:FLASHQLA_FUSED_INVERSE=1 new:FLASHQLA_FUSED_INVERSE=1,FLASHQLA_ROWS_PASS=warps new:FLASHQLA_FUSED_INVERSE=0"}
bash benchmarks/device_kkt_variants.sh
keep
