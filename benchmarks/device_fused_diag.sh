#!/usr/bin/env bash
# Leave-one-out of the fused variant's auxiliary warpgroup (diagnostic builds, wrong outputs, no tests): old = the
# product (.device-bins-old), new = P's work skipped (.device-bins, FLASHQLA_FUSED_DIAG=nop), mid = the inverse's
# work skipped (.device-bins-mid, FLASHQLA_FUSED_DIAG=noinv); barrier waits and arrivals kept. Timeline, two passes.
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
export ROWS=${ROWS:-2B-TP1/1024x8,35B-TP1/1024x8,35B-TP1/8192x4}
export VARIANTS=${VARIANTS:-"old:FLASHQLA_FUSED_INVERSE=1 new:FLASHQLA_FUSED_INVERSE=1 mid:FLASHQLA_FUSED_INVERSE=1 old:FLASHQLA_FUSED_INVERSE=0"}
bash benchmarks/device_kkt_variants.sh
keep
