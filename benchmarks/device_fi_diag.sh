#!/usr/bin/env bash
# DIAGNOSTIC: what FlashInfer's inverse costs inside its own kernel, beside what ours costs inside ours. The last of
# four back-to-back calls on one warm machine. The tracked tree (38 MB) leaves room for ~23 MB a call, so FlashInfer's
# CUTLASS DSL travels in three parts: `mkdir -p .device-fi3 && cat .device-fi/cdsl.part.aa .device-fi/cdsl.part.ab |
# split -b 23100000 - .device-fi3/cdsl3.part.` here; on the device (1) carry .device-fi3/cdsl3.part.aa, run `mkdir -p
# /tmp/site /tmp/stage && cp .device-fi3/cdsl3.part.aa /tmp/stage/`; (2) the same with part .ab; (3) carry part .ac,
# run `cat /tmp/stage/cdsl3.part.aa /tmp/stage/cdsl3.part.ab .device-fi3/cdsl3.part.ac | xz -d | tar -C /tmp/site -xf -`.
# This call: carry .device-fi/fi.tar.xz, .device-tvm, .device-lean, .device-bins (a build with the diagnostic specs of
# results/2026-11-27-h200-s40/fused_noinv_paux_loo/noinv_paux.patch, the patch applied to the tree).
# FlashInfer is patched by benchmarks/fi_diag_patch.py (FI_DIAG_LEVELS: the levels of its inverse that run).
# Timelines (benchmarks/timeline.py: L2 flushed, median of 20 forwards), variants interleaved, PASSES passes.
set -uo pipefail
tar -C /tmp/site -xJf .device-fi/fi.tar.xz && tar -C /tmp/site -xJf .device-tvm/site.tar.xz \
  && tar -C /tmp/site -xJf .device-lean/site.tar.xz
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw --format=csv > "$R/nvidia-smi.txt"
python -c "import torch, flashinfer; print('torch', torch.__version__, 'flashinfer', flashinfer.__version__)" > "$R/versions.txt" 2>&1
cat "$R/versions.txt"
python benchmarks/fi_diag_patch.py /tmp/site/flashinfer/gdn_kernels/delta_rule_dsl/collective_inverse_hmma.py
ROWS=${ROWS:-2B-TP1/1024x8,35B-TP1/8192x4,397B-TP1/8192x4}
VARIANTS=${VARIANTS:-fi4:flashinfer:FI_DIAG_LEVELS=4 fi0:flashinfer:FI_DIAG_LEVELS=0 fi2:flashinfer:FI_DIAG_LEVELS=2 \
split:flashqla:FLASHQLA_FUSED_INVERSE=0 fused:flashqla:FLASHQLA_FUSED_INVERSE=1 \
noinv_paux:flashqla:FLASHQLA_FUSED_INVERSE=1,FLASHQLA_DIAG_NOINV=1,FLASHQLA_DIAG_P_AUX=1}
for pass in $(seq 1 ${PASSES:-2}); do
  for v in $VARIANTS; do
    tag=${v%%:*}; rest=${v#*:}; lib=${rest%%:*}; envs=$(echo "${rest#*:}" | tr ',' ' ')
    env $envs CUTE_DSL_CACHE_DIR=/tmp/cute_cache_$tag timeout 240 python benchmarks/timeline.py --lib $lib \
      --rows "$ROWS" --out "$R/timeline_${tag}_$pass.json" > "$R/log_${tag}_$pass.txt" 2>&1 || tail -5 "$R/log_${tag}_$pass.txt"
    timeline_line "$R/timeline_${tag}_$pass.json" "${tag}_$pass"
    keep
  done
done
