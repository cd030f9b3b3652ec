#!/usr/bin/env bash
# The reference row over many memory placements (benchmarks/address_probe.py), flashqla and FlashInfer alternating,
# two processes each: the third of the FlashInfer calls (after `SKIP_TESTS=1 SKIP_LAYERS=1 bash
# benchmarks/device_fi1.sh` and the copy call, as for benchmarks/device_fi3.sh).
# Carry [".device-fi/cdsl.part.ab", ".device-bins"] on the machine warm from the first two calls.
set -uo pipefail
cat /tmp/stage/cdsl.part.aa .device-fi/cdsl.part.ab | xz -d | tar -C /tmp/site -xf - && rm -f /tmp/stage/cdsl.part.aa
source benchmarks/device_env.sh
TRIALS=${TRIALS:-12}
for p in 1 2; do
  for lib in flashqla flashinfer; do
    timeout 200 python benchmarks/address_probe.py --lib $lib --trials "$TRIALS" --out "$R/probe_${lib}_$p.json" 2>&1 \
      | grep -E "trial|Error" | sed "s/^/[$lib $p] /"
    keep
  done
done
