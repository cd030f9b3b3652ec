#!/usr/bin/env bash
# Errors against float64 (benchmarks/accuracy.py, flashqla alone, seeds 31-33: the inputs of the README's figures) of
# the forward's paths, each forced: the split path, the fused variant with the stripes inverse and with the register
# inverse (V block 128, where the fused variant exists). FlashQLA's figures on the same inputs are the README's.
# Run: mkdir -p /tmp/site && tar -C /tmp/site -xJf .device-lean/site.tar.xz && bash benchmarks/device_accuracy_forms.sh
# (carry .device-lean, .device-bins). FORMS overrides ("tag:VAR=value,VAR=value ...").
set -uo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/nvidia-smi.txt"
FORMS=${FORMS:-split:FLASHQLA_FUSED_INVERSE=0 \
stripes:FLASHQLA_FUSED_INVERSE=1,FLASHQLA_BLOCK_V=128,FLASHQLA_INVERSE_FORM=stripes \
regs:FLASHQLA_FUSED_INVERSE=1,FLASHQLA_BLOCK_V=128,FLASHQLA_INVERSE_FORM=regs}
for v in $FORMS; do
  tag=${v%%:*}; envs=$(echo "${v#*:}" | tr ',' ' ')
  env $envs timeout 280 python benchmarks/accuracy.py --libs flashqla --seeds ${SEEDS:-31,32,33} \
    --out "$R/accuracy_$tag.json" > "$R/accuracy_$tag.log" 2>&1
  echo "$tag"; grep "mean over" "$R/accuracy_$tag.log"
  keep
done
