#!/usr/bin/env bash
# Third of the three back-to-back FlashInfer calls (see ../shared/device/make-flashinfer-bundle.sh): finish
# unpacking its CUTLASS DSL, run the layer-kernel GPU tests, then the full grid for flashqla, FlashInfer, FLA.
# Carry [".device-fi/cdsl.part.ab", ".device-bins"] on a machine warm from the first two calls.
set -uo pipefail
cat /tmp/stage/cdsl.part.aa .device-fi/cdsl.part.ab | xz -d | tar -C /tmp/site -xf - && rm -f /tmp/stage/cdsl.part.aa
source benchmarks/device_env.sh
mkdir -p "$OUT/r"
FLASHQLA_POISON=1 timeout 200 python -m pytest -q -m gpu -p no:cacheprovider tests/test_layer_kernels_gpu.py \
  tests/test_layers_gpu.py -s > "$OUT/r/layer_tests.log" 2>&1
grep -E "mean \|dlogit\||passed|failed|^FAILED" "$OUT/r/layer_tests.log" | tail -12
tar czf "$OUT/layer_tests.tar.gz" -C "$OUT" r && rm -rf "$OUT/r"
SKIP_TESTS=1 BENCH_TIMEOUT=${BENCH_TIMEOUT:-400} bash benchmarks/device_run.sh all ${LIBS:-flashinfer,flashqla,fla} ${REP:-50}
