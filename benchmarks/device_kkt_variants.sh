#!/usr/bin/env bash
# Variants of kkt_solve or of other runtime settings on ROWS (default: the GVA-1 rows of 2B-TP1) by the timeline
# (benchmarks/timeline.py, torch.profiler, L2 flushed), interleaved twice. Each entry of VARIANTS is "pack:merge" or
# "pack:VAR=value[,VAR=value]": pack old = .device-bins-old, new = .device-bins, mid = .device-bins-mid, alt = .device-bins-alt (if carried); merge = FLASHQLA_KKT_MERGE; e.g.
# VARIANTS="old:auto new:auto new:FLASHQLA_BLOCK_V=64 new:FLASHQLA_PERSISTENT=0". Carry .device-bins, .device-bins-old.
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
ROWS=${ROWS:-2B-TP1/1024x8,2B-TP1/8192x4,2B-TP1/16384+16384,2B-TP1/1x8192,2B-TP1/1x32768}
VARIANTS=${VARIANTS:-old:auto new:auto new:gva}
old() { env PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries "$@"; }
new() { env "$@"; }
mid() { env PYTHONPATH=/tmp/midpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/mid/torch-cuda/_binaries "$@"; }
alt() { env PYTHONPATH=/tmp/altpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/alt/torch-cuda/_binaries "$@"; }
for pk in mid alt; do  # a pack of the working tree only (a warm machine keeps ignored folders of earlier calls)
  rm -rf /tmp/$pk /tmp/${pk}pkg
  if [ -f .device-bins-$pk/torch-cuda.tar.xz ]; then
    mkdir -p /tmp/$pk /tmp/${pk}pkg && tar xJf .device-bins-$pk/torch-cuda.tar.xz -C /tmp/$pk
    ln -sfn /tmp/$pk/torch-cuda /tmp/${pk}pkg/flashqla
  fi
done
for pass in "" 2; do
  for vm in $VARIANTS; do
    v=${vm%%:*}; m=${vm#*:}
    case "$m" in
      *=*) envs=$(echo "$m" | tr ',' ' '); tag=$(echo "$m" | sed 's/FLASHQLA_//g; s/[=,]/-/g') ;;
      *) envs="FLASHQLA_KKT_MERGE=$m"; tag=$m ;;
    esac
    $v $envs timeout 90 python benchmarks/timeline.py --rows "$ROWS" --out "$R/timeline_${v}_$tag$pass.json" > /dev/null 2>&1
    timeline_line "$R/timeline_${v}_$tag$pass.json" "${v}_$tag$pass"
    keep
  done
done
