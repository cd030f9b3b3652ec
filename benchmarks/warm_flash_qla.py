"""Compile FlashQLA's JIT kernels for the grid rows of one head configuration, untimed, so that a later timing
process finds them in TileLang's cache (TILELANG_CACHE_DIR) instead of compiling while the grid's time limit runs.

python benchmarks/warm_flash_qla.py --head 397B-TP8

FlashQLA 0.1.3 JIT-compiles its kernels (tilelang.jit) on the first call of each parameter set: head counts,
dtypes, flags and scale, and the context-parallel path for long sequences with few heads; about 100 s a head
configuration on the H200 machine's host (session 23), so one process walks at most a few configurations inside
the grid's limit. One process per head configuration, run side by side (benchmarks/device_flashqla_warm.sh), puts
the compilations on the host's cores in parallel: ~120 s for all eight on the H200 machine, after which the grid's
FlashQLA pass finished every row (session 24, results/2026-11-25-h200-s24/).
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from bench_prefill import runner  # noqa: E402
from grid import HEAD_CONFIGS, SEQ_LAYOUTS, make_inputs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--head", required=True, choices=sorted(HEAD_CONFIGS))
    args = ap.parse_args()
    H, HV = HEAD_CONFIGS[args.head]
    run = runner("flash_qla")
    for seqs, lengths in SEQ_LAYOUTS.items():
        t0 = time.perf_counter()
        inp = make_inputs(H, HV, lengths)
        run(inp)
        torch.cuda.synchronize()
        print(f"{args.head} {seqs}: first call {time.perf_counter() - t0:.1f} s", flush=True)
        inp = None


if __name__ == "__main__":
    main()
