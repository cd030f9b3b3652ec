#!/usr/bin/env bash
# A kernel-iteration call: kernel tests on poisoned outputs (every variant), the quick rows for each state
# warpgroup count (1 vs 2) with the kkt_solve time alone, the whole GPU test suite, and the GDN layer stack
# against FLA's Triton kernels. Carry [".device", ".device-bins"].
set -uo pipefail
source benchmarks/device_env.sh
R=$OUT/r; mkdir -p "$R"; keep() { tar czf "$OUT/results.tar.gz" -C "$OUT" r; }
FLASHQLA_POISON=1 timeout 150 python -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py \
  > "$R/kernel_tests.log" 2>&1; tail -2 "$R/kernel_tests.log"; grep -E "^FAILED" "$R/kernel_tests.log" | head -5
for sg in ${STATE_GROUPS_LIST:-2 1}; do
  for bv in auto 64; do
    env FLASHQLA_STATE_GROUPS=$sg $( [ "$bv" != auto ] && echo FLASHQLA_BLOCK_V=$bv ) timeout 100 \
      python benchmarks/bench_prefill.py --lib flashqla --rows quick --rep 50 --breakdown \
      --out "$R/quick_sg${sg}_bv${bv}.json" 2>&1 | grep -v Warn | sed "s/^/[sg=$sg bv=$bv] /"
  done
done
keep
timeout 300 python tests/gpu_entry.py --out "$R/gpu_tests.json" --gpu-only > "$R/gpu_tests.log" 2>&1
grep -E "^(FAILED|ERROR)|passed|failed|per-token" "$R/gpu_tests.log" | tail -12
keep
timeout 100 python benchmarks/bench_layers.py flashqla 32768 --out "$R/layers_flashqla.json" 2>&1 | tail -1
FLA_FLASH_QLA=0 timeout 120 python benchmarks/bench_layers.py fla 32768 --out "$R/layers_fla.json" 2>&1 | tail -1
keep
