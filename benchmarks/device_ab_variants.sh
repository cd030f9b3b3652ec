#!/usr/bin/env bash
# Several builds and runtime switches in one call. VARIANTS="name=bins[:VAR=value,VAR=value] ..." where bins is
# new (.device-bins), old (.device-bins-old, imported as its own package) or alt (.device-bins-alt), e.g.
#   VARIANTS="new=new old=old newF=new:FLASHQLA_FUSED_INVERSE=1 oldF=old:FLASHQLA_FUSED_INVERSE=1"
# Steps: poisoned kernel tests of the new (and alt) build; output hashes of every variant at block_v 128 and at the
# default block_v (benchmarks/bitwise_ab.py: equal hashes = bitwise equal outputs); then ROWS timed for every
# variant in order, twice (the second pass's names end in 2), kkt_solve alone beside each total.
# ALT_ENV="VAR=value ...": the environment of the alt build's kernel tests (e.g. the runtime switch its kernels need).
# Carry [".device", ".device-bins", ".device-bins-old"] and, if used, ".device-bins-alt".
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
ALT_BINS=""
if [ -f .device-bins-alt/torch-cuda.tar.xz ]; then
  rm -rf /tmp/alt && mkdir -p /tmp/alt && tar xJf .device-bins-alt/torch-cuda.tar.xz -C /tmp/alt
  ALT_BINS=/tmp/alt/torch-cuda/_binaries
elif [ -n "${ALT_ENV:-}" ]; then  # no alt pack: the alt kernel tests are the new build's under ALT_ENV
  ALT_BINS=$FLASHQLA_BINARIES_DIR
fi
sha256sum /tmp/old/torch-cuda/_binaries/manifest.json "$FLASHQLA_BINARIES_DIR/manifest.json" \
  ${ALT_BINS:+$ALT_BINS/manifest.json} > "$R/manifests.sha256"
kernel_tests 150; mv "$R/kernel_tests.log" "$R/kernel_tests_new.log"
if [ -n "$ALT_BINS" ]; then
  env ${ALT_ENV:-} FLASHQLA_BINARIES_DIR=$ALT_BINS bash -c "$(declare -f kernel_tests); R=$R; kernel_tests 150"
  mv "$R/kernel_tests.log" "$R/kernel_tests_alt.log"
fi
keep
# a build that fails its kernel tests is not timed
for log in "$R"/kernel_tests_*.log; do
  if ! grep -qE "[0-9]+ passed" "$log" || grep -qE "[0-9]+ (failed|error)|Timeout|timed out" "$log"; then
    echo "kernel tests did not pass ($log): no timing"; tail -40 "$log"; exit 3
  fi
done
run_variant() {  # $1 = variant spec, then the command to run under it
  local spec=$1; shift
  local rest=${spec#*=} bins pypath=$PYTHONPATH
  local which=${rest%%:*} envs=""
  [ "$rest" != "$which" ] && envs=$(echo "${rest#*:}" | tr ',' ' ')
  case $which in
    old) bins=/tmp/old/torch-cuda/_binaries; pypath=/tmp/oldpkg:$PYTHONPATH;;
    alt) bins=$ALT_BINS;;
    *) bins=$FLASHQLA_BINARIES_DIR;;
  esac
  env $envs PYTHONPATH=$pypath FLASHQLA_BINARIES_DIR=$bins "$@"
}
for spec in $VARIANTS; do
  name=${spec%%=*}
  run_variant "$spec" FLASHQLA_BLOCK_V=128 timeout 60 python benchmarks/bitwise_ab.py --out "$R/hash128_$name.json" > /dev/null 2>&1
  run_variant "$spec" timeout 60 python benchmarks/bitwise_ab.py --out "$R/hash_$name.json" > /dev/null 2>&1
done
md5sum "$R"/hash*.json | sed "s#$R/##" | sort | tee "$R/hashes.md5"
keep
ROWS=${ROWS:-397B-TP1/8192x4,397B-TP2/8192x4,35B-TP1/8192x4,27B-TP1/16384+16384,27B-TP1/8192x4,397B-TP1/1024x8,27B-TP1/1x32768}
warm_up
for pass in "" 2; do
  for spec in $VARIANTS; do
    name=${spec%%=*}$pass
    run_variant "$spec" timeout 120 python benchmarks/bench_prefill.py --lib flashqla --rows "$ROWS" --rep 50 \
      --breakdown --out "$R/ab_$name.json" 2>&1 | grep -E "^flashqla" | sed "s/^/[$name] /"
    keep
  done
done
