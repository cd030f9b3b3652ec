#!/usr/bin/env bash
# Session 33: kkt_solve's slots by the persistent grid's rounds ("rounds_last_first") against "chunks_last_first" by
# the timeline (two interleaved passes), the two GPU tests of the orders, and the card's clocks and power sampled by
# nvidia-smi while do_bench and the timeline time the reference row (does the benchmark's median run at another
# clock than the timeline's 20 forwards?). Carry .device-lean, .device-bins, .device-bins-old.
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
timeout 200 python -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py -k "slot_orders or round_order" \
  > "$R/order_tests.log" 2>&1; tail -2 "$R/order_tests.log"
ROWS=${ROWS:-35B-TP1/1024x8,27B-TP1/1024x8,397B-TP2/1024x8,397B-TP1/1024x8,27B-TP2/1024x8,397B-TP1/8192x4,27B-TP1/8192x4,2B-TP1/1024x8} \
VARIANTS="new:FLASHQLA_KKT_SLOTS=chunks_last_first new:FLASHQLA_KKT_SLOTS=rounds_last_first" \
  bash benchmarks/device_kkt_variants.sh
q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active
nvidia-smi --query-gpu=$q --format=csv,noheader -lms 100 > "$R/smi.csv" 2>&1 & smi=$!
sleep 1; echo "bench $(date +%T.%N)" >> "$R/smi_marks.txt"
timeout 100 python benchmarks/bench_prefill.py --lib flashqla --rows 397B-TP1/8192x4 --rep 400 --out "$R/bench_ref.json" 2>&1 | grep -v Warn
echo "timeline $(date +%T.%N)" >> "$R/smi_marks.txt"
timeout 90 python benchmarks/timeline.py --rows 397B-TP1/8192x4 --iters 40 --out "$R/timeline_ref.json" > /dev/null 2>&1
timeline_line "$R/timeline_ref.json" ref_timeline
echo "end $(date +%T.%N)" >> "$R/smi_marks.txt"
kill $smi; keep
python - "$R" <<'PY'
import csv, sys
rows = [r for r in csv.reader(open(sys.argv[1] + "/smi.csv")) if len(r) >= 5]
def num(x):
    try: return float(x.strip().split()[0])
    except Exception: return None
sm = [num(r[1]) for r in rows if num(r[1])]; pw = [num(r[3]) for r in rows if num(r[3])]
print("smi samples", len(rows), "sm MHz min/median/max", min(sm), sorted(sm)[len(sm)//2], max(sm),
      "power W max", max(pw), "reasons", sorted({r[5].strip() for r in rows if len(r) > 5})[:6])
PY
