#!/usr/bin/env bash
# Leave-one-phase-out diagnostics of kkt_solve_gva (per_head, bf16, no in-kernel norms: GVA 1-3) by the timeline:
# each .device-diag/X.so replaces that binary in a copy of the build (X = none, stripes, diag, epilogue, kkgemm,
# kload; wrong outputs except none), kkt_solve_gva's duration read per row. Two passes interleaved.
# Carry .device-lean (unpacked to /tmp/site by the caller), .device-bins, .device-diag.
set -uo pipefail
source benchmarks/device_env.sh
ROWS=${ROWS:-2B-TP1/1024x8,2B-TP1/8192x4,35B-TP1/1024x8,35B-TP1/8192x4,27B-TP1/1024x8}
SPEC=kkt_solve_gva__dtype-bf16__factor_fetch-per_head__use_l2norm-0
for X in ${VARIANTS:-none stripes diag epilogue kkgemm kload}; do
  rm -rf /tmp/v_$X && cp -r build/torch-cuda /tmp/v_$X && cp .device-diag/$X.so /tmp/v_$X/_binaries/$SPEC.so
done
for pass in "" 2; do
  for X in ${VARIANTS:-none stripes diag epilogue kkgemm kload}; do
    FLASHQLA_FUSED_INVERSE=0 FLASHQLA_BINARIES_DIR=/tmp/v_$X/_binaries timeout 90 python benchmarks/timeline.py \
      --rows "$ROWS" --out "$R/timeline_$X$pass.json" > "$R/timeline_$X$pass.log" 2>&1
    timeline_line "$R/timeline_$X$pass.json" "$X$pass"
    keep
  done
done
