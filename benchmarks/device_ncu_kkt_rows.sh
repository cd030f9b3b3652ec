#!/usr/bin/env bash
# Nsight Compute (full set, source counters) on the default kkt_solve (kkt_solve_gva) alone, on the rows given in ROWS ("HEAD:SEQS ..."),
# after the poisoned kernel tests (SKIP_TESTS=1: none); TAG (default empty) is appended to each file's name, so that a
# second run under other settings (e.g. FLASHQLA_KKT_MERGE=mma16) keeps the first one's files. Carry [".device",
# ".device-bins"] (".device-bins" alone is enough: the GPU image has torch and Nsight Compute).
# Read with benchmarks/ncu_source_lines.py (src_<row>.csv.xz) and ncu_details_<row>.txt.
set -uo pipefail
source benchmarks/device_env.sh
[ "${SKIP_TESTS:-0}" = 1 ] || kernel_tests; keep
KERNEL=kkt ROWS="${ROWS:-397B-TP1:8192x4 2B-TP1:1024x8}" bash benchmarks/device_ncu_src.sh
