#!/usr/bin/env bash
# Issue 4's three layer-stack figures in one call on one GPU: flashqla, transformers + FLA Triton
# (FLA_FLASH_QLA=0), transformers + FLA -> FlashQLA (FLA_FLASH_QLA unset, FlashQLA importable; it JIT-compiles
# on first use, so it runs once to warm up and is then timed in a second process), then flashqla again to
# bracket drift; then the GDN mixer decode step for the three, in two adjacent triples.
# Carry [".device", ".device-bins"].
set -uo pipefail
source benchmarks/device_env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv > "$R/nvidia-smi.txt"
git_rev=${GIT_REV:-unknown}; echo "$git_rev" > "$R/commit.txt"
timeout 100 python benchmarks/bench_layers.py flashqla 32768 --out "$R/layers_flashqla_a.json" 2>&1 | tail -1
FLA_FLASH_QLA=0 timeout 120 python benchmarks/bench_layers.py fla 32768 --out "$R/layers_fla_triton.json" 2>&1 | tail -1
keep
(unset FLA_FLASH_QLA; timeout 240 python benchmarks/bench_layers.py fla 2048 --out "$R/warm_fla_flashqla.json" \
  > "$R/warm_fla_flashqla.log" 2>&1; tail -1 "$R/warm_fla_flashqla.log")
(unset FLA_FLASH_QLA; timeout 150 python benchmarks/bench_layers.py fla 32768 --out "$R/layers_fla_flashqla.json" 2>&1 | tail -1)
timeout 100 python benchmarks/bench_layers.py flashqla 32768 --out "$R/layers_flashqla_b.json" 2>&1 | tail -1
keep
for i in 1 2; do
  timeout 60 python benchmarks/bench_layers.py flashqla 512 --decode-only --out "$R/decode_flashqla_$i.json" 2>&1 | tail -1
  FLA_FLASH_QLA=0 timeout 60 python benchmarks/bench_layers.py fla 512 --decode-only --out "$R/decode_fla_triton_$i.json" 2>&1 | tail -1
  (unset FLA_FLASH_QLA; timeout 90 python benchmarks/bench_layers.py fla 512 --decode-only --out "$R/decode_fla_flashqla_$i.json" 2>&1 | tail -1)
  keep
done
