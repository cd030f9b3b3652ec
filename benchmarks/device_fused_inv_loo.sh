#!/usr/bin/env bash
# Leave-one-out of the fused variant's inverse (auxiliary warpgroup, P on the state warpgroups), diagnostic builds
# with wrong outputs, no tests: old = the product (.device-bins-old), new = the gated epilogue skipped
# (.device-bins, FLASHQLA_FUSED_DIAG=noepi), mid = the row stripes skipped (nostripes), alt = the diagonal blocks'
# substitution skipped (nodiag); barriers kept. Timeline, two passes. Carry the four packs and .device-lean.
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
export ROWS=${ROWS:-2B-TP1/1024x8,35B-TP1/8192x4,27B-TP2/8192x4}
export VARIANTS=${VARIANTS:-"old:FLASHQLA_FUSED_INVERSE=1 new:FLASHQLA_FUSED_INVERSE=1 mid:FLASHQLA_FUSED_INVERSE=1 alt:FLASHQLA_FUSED_INVERSE=1"}
bash benchmarks/device_kkt_variants.sh
keep
