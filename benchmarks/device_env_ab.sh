#!/usr/bin/env bash
# Runtime settings of one build compared in one call. VARIANTS="name=VAR=value[,VAR=value] ..." (name= alone: the
# defaults), e.g. VARIANTS="split= fused=FLASHQLA_FUSED_INVERSE=1".
# Steps: poisoned kernel tests; output hashes of every variant at block_v 128 and at the default block_v
# (benchmarks/bitwise_ab.py); GPU time by CUDA graph replay (benchmarks/blockv_graph.py --block-vs BLOCK_VS) of ROWS
# for every variant in order, twice (names of the second pass end in 2); then one eager pass of every variant with
# kkt_solve's launches timed alone (bench_prefill.py --breakdown).
# Carry [".device", ".device-bins", ".device-bins-old"] (the baseline is unpacked for the record, not timed).
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
sha256sum "$FLASHQLA_BINARIES_DIR/manifest.json" > "$R/manifests.sha256"
kernel_tests 200
keep
if ! grep -qE "[0-9]+ passed" "$R/kernel_tests.log" || grep -qE "[0-9]+ (failed|error)|Timeout|timed out" "$R/kernel_tests.log"; then
  echo "kernel tests did not pass: no timing"; tail -40 "$R/kernel_tests.log"; exit 3
fi
envs_of() { local rest=${1#*=}; echo "$rest" | tr ',' ' '; }
for spec in $VARIANTS; do
  name=${spec%%=*}
  env $(envs_of "$spec") FLASHQLA_BLOCK_V=128 timeout 60 python benchmarks/bitwise_ab.py --out "$R/hash128_$name.json" > /dev/null 2>&1
  env $(envs_of "$spec") timeout 60 python benchmarks/bitwise_ab.py --out "$R/hash_$name.json" > /dev/null 2>&1
done
md5sum "$R"/hash*.json | sed "s#$R/##" | sort | tee "$R/hashes.md5"
keep
ROWS=${ROWS:-397B-TP1/8192x4,397B-TP1/16384+16384,35B-TP1/8192x4,397B-TP2/8192x4,27B-TP2/8192x4,397B-TP1/1024x8}
for pass in "" 2; do
  for spec in $VARIANTS; do
    name=${spec%%=*}$pass
    env $(envs_of "$spec") timeout 150 python benchmarks/blockv_graph.py --rows "$ROWS" --block-vs "${BLOCK_VS:-128}" \
      --out "$R/graph_$name.json" > "$R/graph_$name.log" 2>&1
    grep -E "pairs" "$R/graph_$name.log" | sed "s/^/[$name] /"
    keep
  done
done
for spec in $VARIANTS; do
  name=${spec%%=*}
  env $(envs_of "$spec") timeout 120 python benchmarks/bench_prefill.py --lib flashqla --rows "$ROWS" --rep 50 \
    --breakdown --out "$R/eager_$name.json" 2>&1 | grep -E "^flashqla" | sed "s/^/[$name] /"
  keep
done
