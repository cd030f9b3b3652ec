#!/usr/bin/env bash
# FlashQLA's JIT kernels for every grid row, compiled into TileLang's cache by one process per head configuration
# side by side (benchmarks/warm_flash_qla.py), before the grid times FlashQLA on the same (still warm) machine.
# Carry [".device"] on the grid's machine (its bundle holds FlashQLA and TileLang), or nothing on a machine warm from
# a call that carried it. First run in session 24: all eight configurations in ~120 s, after which the grid's FlashQLA
# pass finished every row (results/2026-11-25-h200-s24/flashqla_warm, final_grid).
set -uo pipefail
source benchmarks/device_env.sh
for head in 397B-TP1 397B-TP2 397B-TP4 397B-TP8 27B-TP1 27B-TP2 35B-TP1 2B-TP1; do
  timeout ${WARM_LIMIT:-420} python benchmarks/warm_flash_qla.py --head $head > "$R/warm_$head.log" 2>&1 &
done
wait
tail -n 2 "$R"/warm_*.log
du -sh "${TILELANG_CACHE_DIR:-/tmp/tilelang-cache}"
keep
