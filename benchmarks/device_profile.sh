#!/usr/bin/env bash
# A kernel-iteration call with instruction-level profiling: kernel tests (correctness gate), the quick rows,
# Nsight Compute with source counters (per-SASS-instruction stall samples) on kkt_solve and chunk_fwd,
# the whole GPU test suite, then the tour notebook's cells on the GPU. Carry [".device", ".device-bins"].
set -uo pipefail
source benchmarks/device_env.sh
kernel_tests
quick_rows
keep
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ "${SKIP_NCU:-0}" != 1 ]; then
  timeout 150 "$NCU" --clock-control none -k regex:"kkt|chunk_fwd" --launch-skip 2 --launch-count 2 \
    --set full --import-source yes -o "$R/prof" python benchmarks/ncu_target.py 397B-TP1 8192x4 > "$R/ncu_run.log" 2>&1
  tail -3 "$R/ncu_run.log"
  "$NCU" -i "$R/prof.ncu-rep" --page details > "$R/ncu_details.txt" 2>&1
  for k in kkt chunk_fwd; do
    "$NCU" -i "$R/prof.ncu-rep" -k regex:$k --page source --csv --print-source cuda,sass > "$R/src_$k.csv" 2>"$R/src_$k.err" \
      || "$NCU" -i "$R/prof.ncu-rep" -k regex:$k --page source --csv --print-source sass > "$R/src_$k.csv" 2>>"$R/src_$k.err"
    wc -l "$R/src_$k.csv"; head -c 300 "$R/src_$k.err"
  done
  grep -E "^  [a-z_]+kernel|Duration|Executed Ipc A|Registers Per|No Eligible" "$R/ncu_details.txt" | head -12
  xz -T0 "$R/prof.ncu-rep"
  keep
fi
gpu_tests
keep
FLASHQLA_POISON=0 timeout 200 python benchmarks/run_notebook.py examples/flashqla_tour.ipynb "$R/notebook" > "$R/notebook.log" 2>&1
grep -vi "warn\|tilelang" "$R/notebook.log" | tail -12
keep
