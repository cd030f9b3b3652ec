#!/usr/bin/env bash
# One device call for a kernel iteration, most telling first: registers/spills of the binaries, the kernel
# tests (a fast correctness gate), flashqla's variants on the quick rows (kkt_solve merge x V block, with
# the kkt_solve time alone), the whole GPU test suite, the GDN layer stack against FLA's Triton kernels.
# On the GPU machine (carry .device and .device-bins):  bash benchmarks/device_check.sh
set -uo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$R/nvidia-smi.txt"
CUOBJDUMP=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
[ -n "$CUOBJDUMP" ] && for f in build/torch-cuda/_binaries/{chunk_fwd,kkt_solve}*bf16*.so; do
  echo "$(basename $f): $("$CUOBJDUMP" -res-usage "$f" 2>&1 | grep -oE "REG:[0-9]+|STACK:[0-9]+|LOCAL:[0-9]+" | tr '\n' ' ')"
done | tee "$R/res_usage.txt"
kernel_tests
for merge in ${MERGES:-tc regs}; do
  for bv in ${BLOCK_VS:-auto 64}; do
    env FLASHQLA_KKT_MERGE=$merge $( [ "$bv" != auto ] && echo FLASHQLA_BLOCK_V=$bv ) timeout 120 \
      python benchmarks/bench_prefill.py --lib flashqla --rows quick --rep ${REP:-50} --breakdown \
      --out "$R/variant_${merge}_${bv}.json" 2>&1 | grep -v Warn | sed "s/^/[$merge bv=$bv] /"
  done
done
keep
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  gpu_tests 330
  keep
fi
if [ "${SKIP_LAYERS:-0}" != 1 ]; then
  layers_side_by_side 32768
fi
keep
