"""Why a row's do_bench time (the grid) exceeds the sum of its kernels (benchmarks/timeline.py): for each library and
row, at P memory placements (as bench_prefill.py --placements), the do_bench median and, on the same inputs right
after, the profiler's span (first kernel start to last kernel end after each L2 flush, median of --iters).

python benchmarks/gap_probe.py --libs flashqla,flashinfer --rows 397B-TP1/8192x4,35B-TP1/8192x4 --out gap.json

If the gap (do_bench / span) is one library's alone, it is in that library's call (its kernels' DRAM placement, a
host stall, clocks under its load); if both show it, it is how do_bench measures long rows.
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
from grid import HEAD_CONFIGS, SEQ_LAYOUTS, placed_inputs  # noqa: E402
from timeline import FLUSH_BYTES, profiled_iterations  # noqa: E402


def span_us(run, inp, iters):
    """Median span of the kernels after each flush, over iters profiled calls."""
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    spans = [g["kernels"][-1][1] + g["kernels"][-1][2] - g["kernels"][0][1]
             for g in profiled_iterations(lambda: run(inp), flush, iters)]
    return statistics.median(spans), len(spans)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--libs", default="flashqla,flashinfer")
    ap.add_argument("--rows", required=True)
    ap.add_argument("--placements", type=int, default=3)
    ap.add_argument("--iters", type=int, default=15)
    ap.add_argument("--rep", type=int, default=40)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    res = {"device": torch.cuda.get_device_name(), "rows": []}
    for lib in args.libs.split(","):
        run = runner(lib)
        for row in args.rows.split(","):
            head, seqs = row.split("/")
            H, HV = HEAD_CONFIGS[head]
            for p, inp in placed_inputs(H, HV, SEQ_LAYOUTS[seqs], args.placements):
                if hasattr(run, "prep"):
                    inp["_fi"] = run.prep(inp)
                run(inp)
                torch.cuda.synchronize()
                ms = triton.testing.do_bench(lambda: run(inp), warmup=25, rep=args.rep, return_mode="median")
                span, n = span_us(run, inp, args.iters)
                ms2 = triton.testing.do_bench(lambda: run(inp), warmup=25, rep=args.rep, return_mode="median")
                r = {"lib": lib, "row": row, "placement": p, "do_bench_ms": ms, "span_us": span, "iters": n,
                     "do_bench_again_ms": ms2, "gap": ms * 1e3 / span}
                res["rows"].append(r)
                print(json.dumps(r), flush=True)
                inp = None
            torch.cuda.empty_cache()
            json.dump(res, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
