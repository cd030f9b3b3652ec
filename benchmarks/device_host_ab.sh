#!/usr/bin/env bash
# Host time of the launch path, two package versions in one call: benchmarks/host_breakdown.py for the working
# tree's flashqla ("new") and the baseline pack's flat package ("old"), interleaved new / old / new / old.
# Carry [".device", ".device-bins", ".device-bins-old"].
set -uo pipefail
source benchmarks/device_env.sh
rm -rf /tmp/old && mkdir -p /tmp/old && tar xJf .device-bins-old/torch-cuda.tar.xz -C /tmp/old
mkdir -p /tmp/oldpkg && ln -sfn /tmp/old/torch-cuda /tmp/oldpkg/flashqla
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/nvidia-smi.txt"
for variant in new old new2 old2; do
  case $variant in
    old*) env PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries \
            timeout 120 python benchmarks/host_breakdown.py --tag $variant --out "$R/host_$variant.json" 2>&1 | grep "^\[";;
    *) timeout 120 python benchmarks/host_breakdown.py --tag $variant --out "$R/host_$variant.json" 2>&1 | grep "^\[";;
  esac
  keep
done
