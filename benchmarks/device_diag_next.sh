#!/usr/bin/env bash
# A diagnostic call: where the swapped Qwen3-Next model's bf16 error comes from (kernels switched off in
# turn), which notebook tools the GPU machine has, and the GDN layer stack on transformers + FLA ->
# FlashQLA (FlashQLA JIT-compiles on first use: it gets the call's remaining time).
# Carry [".device", ".device-bins"].
set -uo pipefail
source benchmarks/device_env.sh
timeout 150 python benchmarks/diag_qwen3_next.py qwen3_next 2>&1 | grep -v -i "warn\|mapping\|^$" | tee "$R/diag_qwen3_next.txt"
python -c "
import importlib
for m in ('matplotlib', 'nbclient', 'nbformat', 'ipykernel', 'jupyter_client', 'zmq'):
    try:
        importlib.import_module(m); print(m, 'yes')
    except Exception as e:
        print(m, 'no', type(e).__name__)
" 2>&1 | tee "$R/notebook_tools.txt"
keep
timeout 330 python benchmarks/bench_layers.py fla 32768 --out "$R/layers_fla_flashqla.json" 2>&1 | tail -2
keep
