"""GPU time of flashqla's forward per V block (64, 128) on every grid row, free of host time.

python benchmarks/blockv_graph.py --out r.json [--rows head/seqs,...]
Each (row, block_v) forward is captured once in a CUDA graph and timed by replaying it (do_bench: CUDA
events, L2 flushed, median), so the launch path's host time, which dominates the short rows on a slow
host, drops out. The eager time of the automatic choice is recorded beside it. This is the data behind
dispatch.choose_block_v.
"""

import argparse
import json
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(__file__))
from grid import HEAD_CONFIGS, SEQ_LAYOUTS, device_kind, make_inputs  # noqa: E402


def graph_ms(fn):
    fn()  # the first call outside capture: caches (cu_seqlens, chunk table) fill here, not in the graph
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return triton.testing.do_bench(g.replay, warmup=25, rep=100, return_mode="median")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rows", default=None, help="head/seqs,... (default: the whole grid)")
    ap.add_argument("--block-vs", default="64,128", help="V blocks to time by graph replay (comma-separated)")
    args = ap.parse_args()
    import flashqla
    from flashqla import dispatch

    rows = ([tuple(r.split("/")) for r in args.rows.split(",")] if args.rows
            else [(h, s) for h in HEAD_CONFIGS for s in SEQ_LAYOUTS])
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    out = {"device": torch.cuda.get_device_name(0), "kind": device_kind(), "sms": sms, "rows": []}
    for head, seqs in rows:
        H, HV = HEAD_CONFIGS[head]
        lens = SEQ_LAYOUTS[seqs]
        inp = make_inputs(H, HV, lens)
        pairs = len(lens) * HV
        row = {"head": head, "seqs": seqs, "pairs": pairs, "auto": dispatch.choose_block_v(pairs, sms)}

        def run():
            return flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)

        block_vs = [int(b) for b in args.block_vs.split(",")]
        for bv in block_vs:
            os.environ["FLASHQLA_BLOCK_V"] = str(bv)
            row[f"graph_ms_{bv}"] = graph_ms(run)
        os.environ.pop("FLASHQLA_BLOCK_V")
        row["eager_ms_auto"] = triton.testing.do_bench(run, warmup=25, rep=100, return_mode="median")
        out["rows"].append(row)
        graphs = "".join(f"  graph {bv} {row[f'graph_ms_{bv}']:.4f}" for bv in block_vs)
        print(f"{head:9s} {seqs:12s} pairs {pairs:4d} auto {row['auto']:3d}{graphs}  eager(auto) {row['eager_ms_auto']:.4f}",
              flush=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
