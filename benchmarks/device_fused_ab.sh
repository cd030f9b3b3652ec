#!/usr/bin/env bash
# The fused-inverse chunk_fwd of two builds (old = .device-bins-old, new = .device-bins) against the split path, by
# the timeline (interleaved, two passes; a third build, mid = .device-bins-mid, if carried), after the kernel tests on poisoned outputs (the fused variant's outputs
# bitwise the split path's: tests/test_gpu_kernels.py). ROWS as device_kkt_variants.sh takes them.
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
kernel_tests 240
keep
# the fused variant's outputs of each build, bit for bit (and the split path's, the twin of every fused build)
env PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries FLASHQLA_FUSED_INVERSE=1 \
  timeout 60 python benchmarks/bitwise_ab.py --out "$R/hashes_old_fused.json" > /dev/null 2>&1
FLASHQLA_FUSED_INVERSE=1 timeout 60 python benchmarks/bitwise_ab.py --out "$R/hashes_new_fused.json" > /dev/null 2>&1
FLASHQLA_FUSED_INVERSE=0 timeout 60 python benchmarks/bitwise_ab.py --out "$R/hashes_new_split.json" > /dev/null 2>&1
if [ -f .device-bins-mid/torch-cuda.tar.xz ]; then
  rm -rf /tmp/mid && mkdir -p /tmp/mid /tmp/midpkg && tar xJf .device-bins-mid/torch-cuda.tar.xz -C /tmp/mid
  ln -sfn /tmp/mid/torch-cuda /tmp/midpkg/flashqla
  env PYTHONPATH=/tmp/midpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/mid/torch-cuda/_binaries FLASHQLA_FUSED_INVERSE=1 \
    timeout 60 python benchmarks/bitwise_ab.py --out "$R/hashes_mid_fused.json" > /dev/null 2>&1
fi
(cd "$R" && md5sum hashes_*.json)
keep
export ROWS=${ROWS:-2B-TP1/1024x8,35B-TP1/1024x8,35B-TP1/8192x4,27B-TP1/1024x8}
export VARIANTS=${VARIANTS:-"old:FLASHQLA_FUSED_INVERSE=1 new:FLASHQLA_FUSED_INVERSE=1 mid:FLASHQLA_FUSED_INVERSE=1 old:FLASHQLA_FUSED_INVERSE=0"}
bash benchmarks/device_kkt_variants.sh
keep
