#!/usr/bin/env bash
# Where the run-to-run spread of the long many-pair rows comes from (the same binaries measure 0.85-0.96 ms on the
# reference row between processes): ROWS timed RUNS times, each in a fresh process, while nvidia-smi samples the
# SM clock, power, temperature and throttle reasons every 50 ms; every run's start and end are logged, so each
# median can be set beside the clock it ran at (benchmarks/variance_report.py).
# Carry [".device", ".device-bins"].
set -uo pipefail
source benchmarks/device_env.sh
ROWS=${ROWS:-397B-TP1/8192x4,27B-TP1/16384+16384}
RUNS=${RUNS:-8}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv > "$R/nvidia-smi.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,nounits -lms 50 > "$R/smi_samples.csv" 2>&1 &
SMI=$!
warm_up
for i in $(seq 1 "$RUNS"); do
  echo "start $i $(date +%s.%N)" >> "$R/runs.log"
  timeout 120 python benchmarks/bench_prefill.py --lib flashqla --rows "$ROWS" --rep 50 --breakdown \
    --out "$R/run_$i.json" 2>&1 | grep -E "^flashqla" | sed "s/^/[$i] /"
  echo "end $i $(date +%s.%N)" >> "$R/runs.log"
  keep
done
kill $SMI
keep
