"""flashqla against one peer on chosen rows, the two libraries timed alternately on the same machine state: for each
row and input placement, `--rounds` rounds of (peer, flashqla) do_bench medians, the order swapped every round, so
that neither library always runs right after the other's load (the long rows run at the H200's power cap, and a
library's time drifts with how long the GPU has been busy: results/2026-11-25-h200-s24/a_offset_probe).

python benchmarks/paired_rows.py --peer flashinfer --rows 2B-TP1/1024x8,35B-TP1/8192x4 --out paired.json

Reports per row the median of the per-round ratios peer / flashqla over rounds and placements.
"""
import argparse
import json
import os
import statistics
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(__file__))
from bench_prefill import runner  # noqa: E402
from grid import HEAD_CONFIGS, placed_inputs, seq_layout  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", default="flashinfer")
    ap.add_argument("--rows", required=True)
    ap.add_argument("--placements", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--rep", type=int, default=40)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    runs = {"flashqla": runner("flashqla"), args.peer: runner(args.peer)}
    res = {"device": torch.cuda.get_device_name(), "peer": args.peer, "rows": []}
    for row in args.rows.split(","):
        head, seqs = row.split("/")
        H, HV = HEAD_CONFIGS[head]
        ratios, times = [], {lib: [] for lib in runs}
        for p, base in placed_inputs(H, HV, seq_layout(seqs), args.placements):
            inps = {}  # the same tensors; a peer with a prep step gets its prepared views beside them
            for lib, run in runs.items():
                inps[lib] = dict(base, _fi=run.prep(base)) if hasattr(run, "prep") else base
                run(inps[lib])
            torch.cuda.synchronize()
            for r in range(args.rounds):
                order = [args.peer, "flashqla"] if r % 2 == 0 else ["flashqla", args.peer]
                t = {}
                for lib in order:
                    t[lib] = triton.testing.do_bench(lambda: runs[lib](inps[lib]), warmup=10, rep=args.rep,
                                                     return_mode="median")
                    times[lib].append(t[lib])
                ratios.append(t[args.peer] / t["flashqla"])
            base = inps = None
        torch.cuda.empty_cache()
        out = {"row": row, "ratio_median": statistics.median(ratios), "ratios": ratios,
               "ms": {lib: v for lib, v in times.items()}}
        res["rows"].append(out)
        print(f"{row}: {args.peer}/flashqla median {out['ratio_median']:.3f} (min {min(ratios):.3f}, max "
              f"{max(ratios):.3f}); flashqla {statistics.median(times['flashqla']):.3f} ms, {args.peer} "
              f"{statistics.median(times[args.peer]):.3f} ms", flush=True)
        json.dump(res, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
