#!/usr/bin/env bash
# GPU time (CUDA graph replay, benchmarks/blockv_graph.py) of the new build against the old one, new / old / new /
# old on ROWS, free of host time; with SUITE=1 the whole GPU test suite on the new build first.
# Carry [".device", ".device-bins", ".device-bins-old"]. Everything stays under $OUT/r, packed into one results.tar.gz.
set -uo pipefail
source benchmarks/device_env.sh
unpack_baseline
sha256sum /tmp/old/torch-cuda/_binaries/manifest.json "$FLASHQLA_BINARIES_DIR/manifest.json" > "$R/manifests.sha256"
if [ "${SUITE:-0}" = 1 ]; then gpu_tests 420; keep; fi
ROWS=${ROWS:-397B-TP1/8192x4,397B-TP2/8192x4,35B-TP1/8192x4,27B-TP1/16384+16384,27B-TP1/8192x4,397B-TP1/1024x8,27B-TP1/1x32768}
for variant in new old new2 old2; do
  case $variant in
    old*) env PYTHONPATH=/tmp/oldpkg:$PYTHONPATH FLASHQLA_BINARIES_DIR=/tmp/old/torch-cuda/_binaries timeout 150 \
            python benchmarks/blockv_graph.py --rows "$ROWS" --out "$R/graph_$variant.json" > "$R/graph_$variant.log" 2>&1;;
    *) timeout 150 python benchmarks/blockv_graph.py --rows "$ROWS" --out "$R/graph_$variant.json" > "$R/graph_$variant.log" 2>&1;;
  esac
  tail -n 12 "$R/graph_$variant.log" | sed "s/^/[$variant] /"
  keep
done
