#!/usr/bin/env bash
# One device call = GPU tests + SASS check + hub load + prefill benchmark; results in $OUT/results.tar.gz.
# On the GPU machine (carry .device and build/torch-cuda):  bash benchmarks/device_run.sh [quick|all] [libs] [rep_ms]
set -uo pipefail
ROWS=${1:-quick}
LIBS=${2:-flashqla,flash_qla,fla}
REP=${3:-200}
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee "$R/nvidia-smi.txt"
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee "$R/versions.txt"
git rev-parse HEAD 2>/dev/null | tee -a "$R/versions.txt"
TESTS_OK=1
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout 420 python tests/gpu_entry.py --out "$R/gpu_tests.json" --gpu-only > "$R/gpu_tests.log" 2>&1 || TESTS_OK=0
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/gpu_tests.log" | tail -30
fi
if [ "${ACCURACY:-0}" = 1 ]; then
  timeout 300 python benchmarks/accuracy.py --out "$R/accuracy.json" 2>&1 | grep -v Warning | tail -5
fi
if [ "$ROWS" != none ] && { [ "$TESTS_OK" = 1 ] || [ "${FORCE_BENCH:-0}" = 1 ]; }; then
  timeout ${BENCH_TIMEOUT:-480} python benchmarks/run_prefill.py --rows "$ROWS" --libs "$LIBS" --rep "$REP" --out "$R/bench" 2>&1 | tee "$R/bench.log" | grep -v Warning | tail -40
fi
tar czf "$OUT/results.tar.gz" -C "$OUT" r && rm -rf "$R"
