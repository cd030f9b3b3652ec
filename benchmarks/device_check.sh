#!/usr/bin/env bash
# One device call for a kernel iteration: GPU tests, flashqla's variants on the quick rows (kkt_solve merge
# x V block, with the kkt_solve time alone), and the GDN layer stack against FLA's Triton kernels.
# On the GPU machine (carry .device and .device-bins):  bash benchmarks/device_check.sh
set -uo pipefail
source benchmarks/device_env.sh
R=$OUT/r; mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$R/nvidia-smi.txt"
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout 330 python tests/gpu_entry.py --out "$R/gpu_tests.json" --gpu-only > "$R/gpu_tests.log" 2>&1
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/gpu_tests.log" | tail -25
fi
for merge in ${MERGES:-tc regs}; do
  for bv in ${BLOCK_VS:-auto 64}; do
    env FLASHQLA_KKT_MERGE=$merge $( [ "$bv" != auto ] && echo FLASHQLA_BLOCK_V=$bv ) timeout 120 \
      python benchmarks/bench_prefill.py --lib flashqla --rows quick --rep ${REP:-50} --breakdown \
      --out "$R/variant_${merge}_${bv}.json" 2>&1 | grep -v Warn | sed "s/^/[$merge bv=$bv] /"
  done
done
if [ "${SKIP_LAYERS:-0}" != 1 ]; then
  timeout 120 python benchmarks/bench_layers.py flashqla 32768 --out "$R/layers_flashqla.json" 2>&1 | tail -1
  FLA_FLASH_QLA=0 timeout 150 python benchmarks/bench_layers.py fla 32768 --out "$R/layers_fla.json" 2>&1 | tail -1
  PROFILE_JSON=$R/profile_flashqla.json timeout 120 python benchmarks/profile_layers.py flashqla 32768 > "$R/profile_flashqla.txt" 2>&1
fi
tar czf "$OUT/results.tar.gz" -C "$OUT" r && rm -rf "$R"
