#!/usr/bin/env bash
# The fused variant's register inverse (chunk_fwd inverse_form "regs", flashqla_kernels/inverse_regs.py) against
# its stripes form and the split path: the GPU tests that cover it (poisoned outputs), then the variants by the
# timeline (benchmarks/timeline.py, L2 flushed, medians of 20 forwards), interleaved, PASSES times.
# Run: mkdir -p /tmp/site && tar -C /tmp/site -xJf .device-lean/site.tar.xz && bash benchmarks/device_inverse_regs_ab.sh
# (carry .device-lean, .device-bins, and .device-bins-old for variants of pack "old"). ROWS, PASSES, TESTS (a pytest
# -k expression, "" skips them) and VARIANTS ("label:pack:VAR=value,VAR=value ...", pack new or old) override.
set -uo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv > "$R/nvidia-smi.txt"
TESTS=${TESTS-inverse_regs or fused or chunk_forward}
if [ -n "$TESTS" ]; then
  FLASHQLA_POISON=1 timeout 300 python -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_kernels.py -k "$TESTS" \
    > "$R/regs_tests.log" 2>&1
  grep -E "^(FAILED|ERROR)|passed|failed" "$R/regs_tests.log" | tail -12
  keep
fi
new() { env "$@"; }
old() { env PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries "$@"; }
if [ -f .device-bins-old/torch-cuda.tar.xz ]; then
  rm -rf /tmp/old /tmp/oldpkg && mkdir -p /tmp/old /tmp/oldpkg && tar xJf .device-bins-old/torch-cuda.tar.xz -C /tmp/old
  ln -sfn /tmp/old/torch-cuda /tmp/oldpkg/flashqla
fi
ROWS=${ROWS:-2B-TP1/1024x8,35B-TP1/1024x8,35B-TP1/8192x4,397B-TP1/8192x4,27B-TP2/8192x4}
VARIANTS=${VARIANTS:-split:new:FLASHQLA_FUSED_INVERSE=0 stripes:new:FLASHQLA_FUSED_INVERSE=1 \
regs:new:FLASHQLA_FUSED_INVERSE=1,FLASHQLA_INVERSE_FORM=regs}
for pass in $(seq 1 ${PASSES:-2}); do
  for v in $VARIANTS; do
    tag=${v%%:*}; rest=${v#*:}; pack=${rest%%:*}; envs=$(echo "${rest#*:}" | tr ',' ' ')
    $pack $envs timeout 120 python benchmarks/timeline.py --rows "$ROWS" --out "$R/timeline_${tag}_$pass.json" \
      > /dev/null 2>&1
    timeline_line "$R/timeline_${tag}_$pass.json" "${tag}_$pass"
    keep
  done
done
