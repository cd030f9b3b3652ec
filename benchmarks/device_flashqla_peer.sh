#!/usr/bin/env bash
# The FlashQLA column of the full grid, the accuracy comparison (flashqla and FlashQLA against float64), the
# layer stack on transformers + FLA -> FlashQLA, decode-step profiles and Nsight Compute on kkt_solve.
# Carry [".device", ".device-bins"].
set -uo pipefail
source benchmarks/device_env.sh
R=$OUT/r; mkdir -p "$R"
timeout 240 python benchmarks/accuracy.py --out "$R/accuracy.json" 2>&1 | grep -v Warn | tail -3
timeout 260 python benchmarks/run_prefill.py --rows all --libs flash_qla --rep ${REP:-50} --out "$R/bench" 2>&1 \
  | grep -v Warn | grep -E "^flash_qla|Error" | tail -3
timeout 120 python benchmarks/bench_layers.py fla 32768 --out "$R/layers_fla_flashqla.json" 2>&1 | tail -1
for w in flashqla fla; do
  env $( [ $w = fla ] && echo FLA_FLASH_QLA=0 ) timeout 90 python benchmarks/profile_layers.py $w 512 --decode \
    > "$R/decode_profile_$w.txt" 2>&1
  grep -E "Self CPU time total|Self CUDA time total" "$R/decode_profile_$w.txt"
done
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 100 "$NCU" --clock-control none -k regex:"kkt" --launch-skip 1 --launch-count 1 --set full \
  python benchmarks/ncu_target.py 397B-TP1 8192x4 > "$R/ncu_kkt.txt" 2>&1
grep -E "Duration|Executed Ipc A|L1/TEX Hit|Mem Busy|Bank" "$R/ncu_kkt.txt" | head -8
tar czf "$OUT/results.tar.gz" -C "$OUT" r
