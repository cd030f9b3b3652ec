#!/usr/bin/env bash
# GDN-only decode latency (flashqla vs FLA Triton), accuracy vs float64 with FlashQLA beside, the FlashQLA
# column of the full grid, the Qwen3-Next cache test. Carry [".device", ".device-bins"].
set -uo pipefail
source benchmarks/device_env.sh
timeout 60 python benchmarks/bench_layers.py flashqla 512 --decode-only --out "$R/decode_flashqla.json" 2>&1 | tail -1
FLA_FLASH_QLA=0 timeout 75 python benchmarks/bench_layers.py fla 512 --decode-only --out "$R/decode_fla.json" 2>&1 | tail -1
keep
timeout 170 python benchmarks/accuracy.py --out "$R/accuracy.json" 2>&1 | grep -v Warn | grep -E "^(1x|ragged)" | cut -c1-300
keep
timeout 140 python benchmarks/bench_prefill.py --lib flash_qla --rows all --rep 50 --out "$R/bench_flash_qla.json" 2>&1 \
  | grep -E "^flash_qla" | tail -4
keep
