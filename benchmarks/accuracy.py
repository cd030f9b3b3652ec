"""Error of flashqla and FlashQLA against the float64 token recurrence on the same inputs (issue 3).

python benchmarks/accuracy.py --out acc.json
Inputs: bf16 q/k/v (q, k normalised), strong decay (g down to -20 per token on a quarter of the heads),
25% zero-decay heads, beta = sigmoid(randn), h0 given; layouts: one 65536-token sequence and a ragged
packed batch with a zero-length sequence. Reports relative L2 error of o and the final state.
"""

import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))
from test_gpu_kernels import make_inputs, oracle  # noqa: E402

CASES = {"1x65536 (2/8 heads)": ([65536], 2, 8), "ragged [1000,4097,63,20000] (2/4 heads)": ([1000, 4097, 63, 20000], 2, 4),
         "ragged with an empty sequence [1000,0,4097,63,20000] (2/4 heads)": ([1000, 0, 4097, 63, 20000], 2, 4)}


def rel(x, ref):
    x, ref = x.double(), ref.double()
    return ((x - ref).norm() / ref.norm()).item() if torch.isfinite(x).all() else float("nan")


def runners():
    import flashqla

    out = {"flashqla": lambda inp: flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)}
    try:
        from flash_qla import chunk_gated_delta_rule as fq

        out["FlashQLA"] = lambda inp: fq(**{**inp, "cu_seqlens": inp["cu_seqlens"].long()}, output_final_state=True)
    except Exception as e:  # reported, not dropped
        out["FlashQLA"] = e
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    res = {"device": torch.cuda.get_device_name(), "cases": {}}
    libs = runners()
    for name, (seqs, H, HV) in CASES.items():
        inp = make_inputs(seqs, H=H, HV=HV, seed=31)
        o_ref, ht_ref = oracle(inp, False)
        row = {}
        for lib, fn in libs.items():
            if isinstance(fn, Exception):
                row[lib] = f"cannot run: {fn}"
                continue
            try:
                o, ht = fn(inp)
            except Exception as e:  # e.g. FlashQLA 0.1.3 rejects zero-length sequences: reported, not dropped
                row[lib] = f"cannot run: {type(e).__name__}: {str(e)[:120]}"
                continue
            row[lib] = {"o": rel(o, o_ref), "final_state": rel(ht, ht_ref)}
        res["cases"][name] = row
        print(name, json.dumps(row), flush=True)
    json.dump(res, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
