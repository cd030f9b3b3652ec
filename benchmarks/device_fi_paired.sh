#!/usr/bin/env bash
# FlashInfer against flashqla, timed alternately (paired_rows.py), on a machine warm from two calls that staged
# FlashInfer (call 1: carry .device-fi/fi.tar.xz and .device-fi/cdsl.part.aa, run `mkdir -p /tmp/site /tmp/stage &&
# tar -C /tmp/site -xJf .device-fi/fi.tar.xz && cp .device-fi/cdsl.part.aa /tmp/stage/`; call 2: carry .device and
# .device-bins, run `source .device/bootstrap.sh`). This is call 3: carry .device-fi/cdsl.part.ab and .device-bins.
# ROWS: the rows (grid names), default the GVA-1/2 rows.
set -uo pipefail
[ -f /tmp/stage/cdsl.part.aa ] && cat /tmp/stage/cdsl.part.aa .device-fi/cdsl.part.ab | xz -d | tar -C /tmp/site -xf - \
  && rm -f /tmp/stage/cdsl.part.aa
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/nvidia-smi.txt"
python -c "import torch, triton, flashinfer; print('torch', torch.__version__, 'triton', triton.__version__, 'flashinfer', flashinfer.__version__)" > "$R/versions.txt" 2>&1
timeout ${PAIRED_LIMIT:-400} python benchmarks/paired_rows.py --peer flashinfer \
  --rows ${ROWS:-2B-TP1/1024x8,35B-TP1/8192x4,35B-TP1/1024x8} --placements ${PLACEMENTS:-2} --rounds ${ROUNDS:-3} --out "$R/paired.json" 2>&1 \
  | grep -v Warn | tail -8
keep
