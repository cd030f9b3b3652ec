#!/usr/bin/env bash
# Do flashqla's short (host-bound) rows get slower the longer a benchmark process runs? (In the s10 grid the
# short rows near the end of flashqla's pass measured ~2x their A/B times.) One process times the short rows
# first; a second times all 48 rows and then the same short rows again; both record host time per call.
# Carry [".device", ".device-bins"].
set -uo pipefail
source benchmarks/device_env.sh
warm_up
SHORT="2B-TP1/1024x8,35B-TP1/1x2048,35B-TP1/1024x8,2B-TP1/1x2048,397B-TP1/1x2048"
ALL=$(python -c "import sys; sys.path.insert(0, 'benchmarks'); from grid import HEAD_CONFIGS, SEQ_LAYOUTS; print(','.join(f'{h}/{s}' for h in HEAD_CONFIGS for s in SEQ_LAYOUTS))")
timeout 60 python benchmarks/bench_prefill.py --lib flashqla --rows "$SHORT" --rep 40 --host --out "$R/short_first.json" 2>&1 | grep -E "^flashqla"
keep
timeout 200 python benchmarks/bench_prefill.py --lib flashqla --rows "$ALL,$SHORT" --rep 40 --host --out "$R/aged.json" 2>&1 | grep -E "^flashqla"
keep
