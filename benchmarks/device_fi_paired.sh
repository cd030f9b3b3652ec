#!/usr/bin/env bash
# FlashInfer against flashqla, timed alternately (paired_rows.py): the last of four back-to-back calls on one warm
# machine, after the three calls that stage FlashInfer's CUTLASS DSL (device_fi_diag.sh's header says how). This
# call: carry .device-fi/fi.tar.xz, .device-tvm, .device-lean and .device-bins (the build under test).
# ROWS: the rows (grid names), default the GVA-1/2 rows; PLACEMENTS, ROUNDS, PAIRED_LIMIT (seconds).
set -uo pipefail
tar -C /tmp/site -xJf .device-fi/fi.tar.xz && tar -C /tmp/site -xJf .device-tvm/site.tar.xz \
  && tar -C /tmp/site -xJf .device-lean/site.tar.xz
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/nvidia-smi.txt"
python -c "import torch, triton, flashinfer; print('torch', torch.__version__, 'triton', triton.__version__, 'flashinfer', flashinfer.__version__)" > "$R/versions.txt" 2>&1
timeout ${PAIRED_LIMIT:-400} python benchmarks/paired_rows.py --peer flashinfer \
  --rows ${ROWS:-2B-TP1/1024x8,35B-TP1/8192x4,35B-TP1/1024x8} --placements ${PLACEMENTS:-2} --rounds ${ROUNDS:-3} --out "$R/paired.json" 2>&1 \
  | grep -v Warn | tail -8
keep
