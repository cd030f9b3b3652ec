"""Host time of one flashqla forward call, apart from the GPU time (small rows are host-bound).

python benchmarks/host_overhead.py [--out r.json] [--profile]
For each row: host microseconds per call (300 calls issued back to back, no sync: the GPU queue is longer
than the host loop only if the GPU is the bottleneck), the benchmark's own time (do_bench, L2 flushed,
median), and optionally the top functions by own time (cProfile).
"""

import argparse
import cProfile
import io
import json
import os
import pstats
import sys
import time

import torch
import triton

sys.path.insert(0, os.path.dirname(__file__))
from grid import HEAD_CONFIGS, SEQ_LAYOUTS, make_inputs  # noqa: E402

ROWS = [("2B-TP1", "1x2048"), ("397B-TP8", "1024x8"), ("2B-TP1", "1024x8")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--tag", default="")
    args = ap.parse_args()
    import flashqla

    out = {"flashqla_path": os.path.dirname(flashqla.__file__), "tag": args.tag, "rows": []}
    for head, seqs in ROWS:
        H, HV = HEAD_CONFIGS[head]
        inp = make_inputs(H, HV, SEQ_LAYOUTS[seqs])

        def run():
            return flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)

        for _ in range(20):
            run()
        torch.cuda.synchronize()
        n = 300
        t = time.perf_counter()
        for _ in range(n):
            run()
        host_us = (time.perf_counter() - t) / n * 1e6
        torch.cuda.synchronize()
        ms = triton.testing.do_bench(run, warmup=25, rep=100, return_mode="median")
        row = {"head": head, "seqs": seqs, "host_us_per_call": host_us, "bench_ms": ms}
        if args.profile:
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(200):
                run()
            pr.disable()
            torch.cuda.synchronize()
            buf = io.StringIO()
            pstats.Stats(pr, stream=buf).sort_stats("tottime").print_stats(18)
            row["profile"] = buf.getvalue()
        print(f"{args.tag} {head} {seqs}: host {host_us:.1f} us/call, bench {ms * 1e3:.1f} us", flush=True)
        out["rows"].append(row)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
