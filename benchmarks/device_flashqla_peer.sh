#!/usr/bin/env bash
# Layer GPU tests, the accuracy comparison (flashqla and FlashQLA against float64), the FlashQLA column of
# the full grid, the layer stack on transformers + FLA -> FlashQLA, decode-step profiles and Nsight Compute
# on kkt_solve, most important first (each step has its own timeout). Carry [".device", ".device-bins"].
set -uo pipefail
source benchmarks/device_env.sh
FLA_FLASH_QLA=0 FLASHQLA_POISON=1 timeout 150 python -m pytest -q -m gpu -p no:cacheprovider -s \
  tests/test_layer_kernels_gpu.py tests/test_layers_gpu.py > "$R/layer_tests.log" 2>&1
grep -E "median|passed|failed|^FAILED" "$R/layer_tests.log" | tail -10
timeout 200 python benchmarks/accuracy.py --out "$R/accuracy.json" 2>&1 | grep -v Warn | tail -3
timeout 200 python benchmarks/run_prefill.py --rows all --libs flash_qla --rep ${REP:-50} --out "$R/bench" 2>&1 \
  | grep -E "Error|geomean" | tail -3
timeout 90 python benchmarks/bench_layers.py fla 32768 --out "$R/layers_fla_flashqla.json" 2>&1 | tail -1
for w in flashqla fla; do
  env $( [ $w = fla ] && echo FLA_FLASH_QLA=0 ) timeout 60 python benchmarks/profile_layers.py $w 512 --decode \
    > "$R/decode_profile_$w.txt" 2>&1
  grep -E "Self CPU time total|Self CUDA time total" "$R/decode_profile_$w.txt"
done
tar czf "$OUT/results.tar.gz" -C "$OUT" r
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout 70 "$NCU" --clock-control none -k regex:"kkt" --launch-skip 1 --launch-count 1 --set full \
  python benchmarks/ncu_target.py 397B-TP1 8192x4 > "$R/ncu_kkt.txt" 2>&1
grep -E "Duration|Executed Ipc A|Mem Busy" "$R/ncu_kkt.txt" | head -4
tar czf "$OUT/results.tar.gz" -C "$OUT" r
