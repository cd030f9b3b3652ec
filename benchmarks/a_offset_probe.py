"""Does the forward's time depend on where its intermediate `a` (the gated inverses, written by kkt_solve and read by
chunk_fwd) sits relative to the inputs? gap_probe.py found flashqla's span on the reference row moving by 7% with the
placement of the call's own allocations, FlashInfer's by 1%.

python benchmarks/a_offset_probe.py --rows 397B-TP1/8192x4,35B-TP1/8192x4 --offsets 0,4096,65536,262144,1048576 \
    --out a_offset.json

For each row and input placement (as bench_prefill.py --placements), the forward is timed (do_bench median) with `a`
allocated as one buffer of constant size (the largest offset added) and used from byte offset `off` on, for each
offset in turn, twice in alternating order. Offsets below 2 MiB move `a`'s address bits within a page, so an effect
that repeats across input placements is one a fixed workspace offset could keep. A diagnostic: flashqla.ops._empty is
patched for `a`'s allocation only.
"""
import argparse
import json
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(__file__))
from bench_prefill import runner  # noqa: E402
from grid import HEAD_CONFIGS, SEQ_LAYOUTS, placed_inputs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", required=True)
    ap.add_argument("--offsets", default="0,4096,65536,262144,1048576")
    ap.add_argument("--placements", type=int, default=3)
    ap.add_argument("--rep", type=int, default=30)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import flashqla.ops as ops

    offsets = [int(x) for x in args.offsets.split(",")]
    extra = max(offsets)
    state = {"off": 0}
    orig = ops._empty

    def patched(*shape, dtype, device):
        if len(shape) == 3 and shape[2] == ops.CHUNK and dtype in (torch.bfloat16, torch.float16):
            n = shape[0] * shape[1] * shape[2]
            buf = torch.empty(n * 2 + extra, dtype=torch.uint8, device=device)
            return buf[state["off"]:state["off"] + 2 * n].view(dtype).view(shape)
        return orig(*shape, dtype=dtype, device=device)

    ops._empty = patched
    run = runner("flashqla")
    res = {"device": torch.cuda.get_device_name(), "rows": []}
    for row in args.rows.split(","):
        head, seqs = row.split("/")
        H, HV = HEAD_CONFIGS[head]
        for p, inp in placed_inputs(H, HV, SEQ_LAYOUTS[seqs], args.placements):
            times = {o: [] for o in offsets}
            for order in (offsets, offsets[::-1]):
                for off in order:
                    state["off"] = off
                    run(inp)
                    torch.cuda.synchronize()
                    times[off].append(triton.testing.do_bench(lambda: run(inp), warmup=10, rep=args.rep,
                                                              return_mode="median"))
            r = {"row": row, "placement": p, "ms": {str(o): t for o, t in times.items()}}
            res["rows"].append(r)
            print(row, p, " ".join(f"{o}:{t[0]:.3f}/{t[1]:.3f}" for o, t in times.items()), flush=True)
            inp = None
        torch.cuda.empty_cache()
        json.dump(res, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
