#!/usr/bin/env bash
# chunk_fwd with its two state warpgroups taking turns to issue each product (wg_turns, .device-bins) against the
# build before (.device-bins-old): the kernel GPU tests on poisoned outputs, output hashes of both builds
# (bitwise_ab.py, with and without the fused inverse), then the timeline of each on ROWS, split path (auto) and the
# fused variant (FLASHQLA_FUSED_INVERSE=1), two interleaved passes. Carry .device-lean, .device-bins, .device-bins-old.
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
kernel_tests 240
old() { env PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries "$@"; }
for fi in 0 1; do
  FLASHQLA_FUSED_INVERSE=$fi timeout 60 python benchmarks/bitwise_ab.py --out "$R/hashes_new_fused$fi.json" > /dev/null 2>&1
  old env FLASHQLA_FUSED_INVERSE=$fi timeout 60 python benchmarks/bitwise_ab.py --out "$R/hashes_old_fused$fi.json" > /dev/null 2>&1
  cmp -s "$R/hashes_new_fused$fi.json" "$R/hashes_old_fused$fi.json" && echo "hashes fused=$fi: equal" || echo "hashes fused=$fi: DIFFER"
done
keep
export ROWS=${ROWS:-2B-TP1/1024x8,35B-TP1/1024x8,35B-TP1/8192x4,397B-TP1/8192x4,27B-TP1/1024x8,397B-TP2/8192x4}
export VARIANTS=${VARIANTS:-"old:FLASHQLA_FUSED_INVERSE=0 new:FLASHQLA_FUSED_INVERSE=0 old:FLASHQLA_FUSED_INVERSE=1 new:FLASHQLA_FUSED_INVERSE=1"}
bash benchmarks/device_kkt_variants.sh
keep
