#!/usr/bin/env bash
# A/B of two kernel builds in one call: poisoned kernel tests on the new build, then the rows below timed
# new / old / new / old (interleaved, so drift shows), kkt_solve alone beside each total.
# Carry [".device", ".device-bins", ".device-bins-old"] (.device-bins-old/torch-cuda.tar.xz: the baseline's pack);
# an optional third build in .device-bins-alt is tested and timed beside them (new / alt / old, twice).
# ALT_ENV="VAR=value ...": the alt variant runs under that environment (with no .device-bins-alt: the new build
# under it, e.g. ALT_ENV=FLASHQLA_KKT_MERGE=regs). PROFILE_KERNEL: the kernel ncu profiles (default chunk_fwd).
set -uo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$R/nvidia-smi.txt"
# a fresh baseline every call (a warm machine keeps /tmp); no baseline pack or manifest: stop, never time the reference
rm -rf /tmp/old && mkdir -p /tmp/old && tar xJf .device-bins-old/torch-cuda.tar.xz -C /tmp/old \
  && [ -f /tmp/old/torch-cuda/_binaries/manifest.json ] || { echo "no baseline binaries in .device-bins-old"; exit 2; }
sha256sum /tmp/old/torch-cuda/_binaries/manifest.json "$FLASHQLA_BINARIES_DIR/manifest.json" > "$R/manifests.sha256"
# Each side runs its own package: the old pack's hub variant (its flat .py files) is imported as `flashqla` for the
# old variants, so a change of a kernel's arguments (and of the runtime that passes them) is timed against the
# baseline as it was. A side that falls back to the reference warns; that warning is kept.
mkdir -p /tmp/oldpkg && ln -sfn /tmp/old/torch-cuda /tmp/oldpkg/flashqla
kernel_tests 150; keep
VARIANTS="new old new2 old2"
ALT_BINS=$FLASHQLA_BINARIES_DIR
if [ -f .device-bins-alt/torch-cuda.tar.xz ]; then
  rm -rf /tmp/alt && mkdir -p /tmp/alt && tar xJf .device-bins-alt/torch-cuda.tar.xz -C /tmp/alt
  ALT_BINS=/tmp/alt/torch-cuda/_binaries
fi
if [ -f .device-bins-alt/torch-cuda.tar.xz ] || [ -n "${ALT_ENV:-}" ]; then
  mv "$R/kernel_tests.log" "$R/kernel_tests_new.log"
  env ${ALT_ENV:-} FLASHQLA_BINARIES_DIR=$ALT_BINS bash -c "$(declare -f kernel_tests); R=$R; kernel_tests 150"
  mv "$R/kernel_tests.log" "$R/kernel_tests_alt.log"
  cat "$R/kernel_tests_new.log" "$R/kernel_tests_alt.log" > "$R/kernel_tests.log"
  VARIANTS="new alt old new2 alt2 old2"
fi
# a new build that fails or hangs its kernel tests is not timed (a wrong kernel's speed means nothing)
if ! grep -qE "[0-9]+ passed" "$R/kernel_tests.log" || grep -qE "[0-9]+ (failed|error)|Timeout|timed out" "$R/kernel_tests.log"; then
  echo "kernel tests did not pass: no timing"; tail -40 "$R/kernel_tests.log"; exit 3
fi
ROWS=${ROWS:-397B-TP1/8192x4,35B-TP1/8192x4,397B-TP2/8192x4,27B-TP1/16384+16384,397B-TP1/1024x8,2B-TP1/1024x8,397B-TP8/1024x8,397B-TP8/1x8192,27B-TP1/1x32768,397B-TP1/1x2048}
warm_up
for variant in $VARIANTS; do
  extra=""
  pypath=$PYTHONPATH
  case $variant in old*) bins=/tmp/old/torch-cuda/_binaries; pypath=/tmp/oldpkg:$PYTHONPATH;; alt*) bins=$ALT_BINS; extra=${ALT_ENV:-};; *) bins=$FLASHQLA_BINARIES_DIR;; esac
  env $extra PYTHONPATH=$pypath FLASHQLA_BINARIES_DIR=$bins timeout 120 python benchmarks/bench_prefill.py --lib flashqla --rows "$ROWS" \
    --rep 50 --breakdown --out "$R/ab_$variant.json" 2>&1 | grep -E "reference|^flashqla" | sed "s/^/[$variant] /"
  keep
done
# ACCURACY=1: benchmarks/accuracy.py (errors against float64) for the new build, the alt variant if any, then the old
if [ "${ACCURACY:-0}" = 1 ]; then
  timeout 200 python benchmarks/accuracy.py --out "$R/accuracy_new.json" > "$R/accuracy_new.txt" 2>&1; tail -8 "$R/accuracy_new.txt"
  if [ "$VARIANTS" != "new old new2 old2" ]; then
    env ${ALT_ENV:-} FLASHQLA_BINARIES_DIR=$ALT_BINS timeout 200 python benchmarks/accuracy.py --out "$R/accuracy_alt.json" \
      > "$R/accuracy_alt.txt" 2>&1; tail -8 "$R/accuracy_alt.txt"
  fi
  PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries timeout 200 \
    python benchmarks/accuracy.py --out "$R/accuracy_old.json" > "$R/accuracy_old.txt" 2>&1; tail -8 "$R/accuracy_old.txt"
  keep
fi
# PROFILE=1: the new build's $PROFILE_KERNEL (default chunk_fwd) under Nsight Compute (source counters, reference row) and its SASS
if [ "${PROFILE:-0}" = 1 ]; then
  NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  PK=${PROFILE_KERNEL:-chunk_fwd}
  timeout 150 "$NCU" --clock-control none -k regex:$PK --launch-skip 1 --launch-count 1 \
    --set full --import-source yes -o "$R/prof" python benchmarks/ncu_target.py 397B-TP1 8192x4 > "$R/ncu_run.log" 2>&1
  "$NCU" -i "$R/prof.ncu-rep" --page details > "$R/ncu_details.txt" 2>&1
  "$NCU" -i "$R/prof.ncu-rep" --page source --csv --print-source cuda,sass > "$R/src_$PK.csv" 2>/dev/null
  xz -T0 "$R/src_$PK.csv" "$R/prof.ncu-rep"
  grep -E "Duration|L1/TEX Cache Throughput|Executed Ipc A|Issue Slots Busy|No Eligible" "$R/ncu_details.txt" | head -8
  so=$(ls "$FLASHQLA_BINARIES_DIR"/chunk_fwd__block_v-128__dtype-bf16__*use_l2norm-1*.so | head -1)
  cuobjdump -sass "$so" > "$R/chunk_fwd_bv128.sass" 2>&1 && xz -T0 "$R/chunk_fwd_bv128.sass"
  keep
fi
