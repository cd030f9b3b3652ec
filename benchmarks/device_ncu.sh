#!/usr/bin/env bash
# Nsight Compute with source counters on kkt_solve and chunk_fwd (reference row), after the kernel tests.
# Carry [".device", ".device-bins"]. Read with benchmarks/ncu_source_lines.py or benchmarks/ncu_wavefronts.py.
set -uo pipefail
source benchmarks/device_env.sh
kernel_tests; keep
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 200 "$NCU" --clock-control none -k regex:"kkt|chunk_fwd" --launch-skip 2 --launch-count 2 \
  --set full --import-source yes -o "$R/prof" python benchmarks/ncu_target.py 397B-TP1 8192x4 > "$R/ncu_run.log" 2>&1
tail -2 "$R/ncu_run.log"
"$NCU" -i "$R/prof.ncu-rep" --page details > "$R/ncu_details.txt" 2>&1
for k in kkt chunk_fwd; do
  "$NCU" -i "$R/prof.ncu-rep" -k regex:$k --page source --csv --print-source cuda,sass > "$R/src_$k.csv" 2>"$R/src_$k.err"
  xz -T0 "$R/src_$k.csv"
done
grep -E "^  [a-z_]+kernel|Duration|L1/TEX Cache Throughput|Executed Ipc A" "$R/ncu_details.txt" | head -12
xz -T0 "$R/prof.ncu-rep"
keep
