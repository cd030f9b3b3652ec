#!/usr/bin/env bash
# Diagnostic (session 11): time the kept build against two builds with work removed from chunk_fwd's auxiliary
# warpgroup (wrong outputs, timing only): d1 = the producer without its per-row factor work (results/2026-11-24-h200-s11/diag_aux/diag_d1.patch),
# d2 = P without its Q K^T product (diag_aux/diag_d2.patch). Carry .device, .device-bins, .device-bins-d1, .device-bins-d2.
source benchmarks/device_env.sh >/dev/null 2>&1
for d in d1 d2; do rm -rf /tmp/$d && mkdir -p /tmp/$d && tar xJf .device-bins-$d/torch-cuda.tar.xz -C /tmp/$d; done
ROWS=397B-TP1/8192x4,27B-TP1/16384+16384,35B-TP1/8192x4,27B-TP1/1x32768
python benchmarks/bench_prefill.py --lib flashqla --rows "$ROWS" --rep 20 --out /tmp/warm.json > /dev/null 2>&1
for v in new d1 d2 new2 d12 d22; do
  case $v in d1*) b=/tmp/d1/torch-cuda/_binaries;; d2*) b=/tmp/d2/torch-cuda/_binaries;; *) b=$FLASHQLA_BINARIES_DIR;; esac
  FLASHQLA_BINARIES_DIR=$b timeout 120 python benchmarks/bench_prefill.py --lib flashqla --rows "$ROWS" --rep 50 --breakdown --out "$R/ab_$v.json" 2>&1 | grep -E "^flashqla" | sed "s/^/[$v] /"
done
keep
