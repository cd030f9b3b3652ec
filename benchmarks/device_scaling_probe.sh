#!/usr/bin/env bash
# Two questions in one call. (1) Where a short row's time goes in the fused-inverse variant against the split path:
# the timeline of 2B-TP1 (GVA 1) and 35B-TP1 (GVA 2) at 8 or 4 sequences of growing length, so each path's time
# splits into a per-chunk step (the slope) and a fixed cost (the intercept). (2) Whether do_bench's median on a long
# row reads the steady clock: flashqla's reference row and 35B-TP1 8192x4 at do_bench warmup 25 ms (the grid's) and
# 1000 ms, the SM clock sampled meanwhile. Carry .device-lean, .device-bins, .device-bins-old (any build).
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
export ROWS=${ROWS:-2B-TP1/256x8,2B-TP1/512x8,2B-TP1/1024x8,2B-TP1/2048x8,2B-TP1/4096x8,35B-TP1/512x4,35B-TP1/2048x4,35B-TP1/8192x4}
export VARIANTS=${VARIANTS:-"new:FLASHQLA_FUSED_INVERSE=1 new:FLASHQLA_FUSED_INVERSE=0"}
bash benchmarks/device_kkt_variants.sh
keep
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,clocks_event_reasons.active --format=csv -lms 100 > "$R/smi.csv" &
SMI=$!
i=0
for w in 25 1000 25 1000; do
  i=$((i + 1))
  echo "warmup $w $(date +%T.%N)" >> "$R/smi_marks.txt"
  timeout 120 python benchmarks/bench_prefill.py --lib flashqla --rows 397B-TP1/8192x4,35B-TP1/8192x4 --rep 40 \
    --warmup $w --out "$R/bench_warmup_${w}_$i.json" 2>&1 | grep -v Warn
  sleep 2
done
kill $SMI
keep
