"""Does the reference row's time depend on where its tensors sit in memory? (the run-to-run spread, session 17)

python benchmarks/address_probe.py [--lib flashqla|flashinfer|...] [--row 397B-TP1/8192x4] [--trials 8] --out r.json
In one process: the same inputs copied to fresh allocations behind a spacer of a different size each trial (so
every input, output and internal buffer lands elsewhere), each trial timed eagerly (do_bench, L2 flushed, median)
and by CUDA graph replay, with the inputs' addresses modulo 2 MiB. Equal times across trials: the spread between
processes is not placement; trials that differ like the processes do: it is. Each trial also records the address
and size of every allocation over 1 MiB that one forward makes (the output, ht and flashqla's internal buffers, by
wrapping Tensor.new_empty and torch.empty for that call), to find which relative placement is slow.
"""
import argparse
import json
import os
import sys

import torch
import triton

sys.path.insert(0, os.path.dirname(__file__))
from blockv_graph import graph_ms  # noqa: E402
from bench_prefill import runner  # noqa: E402
from grid import HEAD_CONFIGS, SEQ_LAYOUTS, make_inputs  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="flashqla")
    ap.add_argument("--row", default="397B-TP1/8192x4")
    ap.add_argument("--trials", type=int, default=8)
    ap.add_argument("--stride-kib", type=int, default=4, help="the spacers grow by this many KiB a trial (plus MiBs)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    fn = runner(args.lib)
    head, seqs = args.row.split("/")
    H, HV = HEAD_CONFIGS[head]
    base = make_inputs(H, HV, SEQ_LAYOUTS[seqs])
    out = {"device": torch.cuda.get_device_name(0), "lib": args.lib, "row": args.row, "trials": []}
    spacers = []
    for trial in range(args.trials):
        spacer_bytes = (trial * 37 + 1) * (1 << 20) + trial * 1024 * args.stride_kib
        spacers.append(torch.empty(spacer_bytes, dtype=torch.uint8, device="cuda"))
        inp = {k: (v.clone() if torch.is_tensor(v) else v) for k, v in base.items()}
        if hasattr(fn, "prep"):  # FlashInfer's layout, made outside the timed call
            inp["_fi"] = fn.prep(inp)

        def run():
            return fn(inp)

        allocs = []
        real_new_empty, real_empty = torch.Tensor.new_empty, torch.empty

        def new_empty(self, *a, **kw):
            t = real_new_empty(self, *a, **kw)
            if t.numel() * t.element_size() > (1 << 20):
                allocs.append([list(t.shape), str(t.dtype), t.data_ptr()])
            return t

        def empty(*a, **kw):
            t = real_empty(*a, **kw)
            if t.is_cuda and t.numel() * t.element_size() > (1 << 20):
                allocs.append([list(t.shape), str(t.dtype), t.data_ptr()])
            return t

        torch.Tensor.new_empty, torch.empty = new_empty, empty
        try:
            res = run()
            o, ht = (res[0], res[1]) if isinstance(res, (tuple, list)) and len(res) > 1 else (res, None)
        finally:
            torch.Tensor.new_empty, torch.empty = real_new_empty, real_empty
        allocs.append(["o", list(o.shape), o.data_ptr()])
        if torch.is_tensor(ht):
            allocs.append(["ht", list(ht.shape), ht.data_ptr()])
        del o, ht, res
        eager = triton.testing.do_bench(run, warmup=25, rep=100, return_mode="median")
        graph = graph_ms(run)
        mods = {k: v.data_ptr() % (2 << 20) for k, v in inp.items() if torch.is_tensor(v)}
        ptrs = {k: v.data_ptr() for k, v in inp.items() if torch.is_tensor(v)}
        out["trials"].append({"eager_ms": eager, "graph_ms": graph, "addr_mod_2MiB": mods, "inputs": ptrs,
                              "allocs": allocs})
        print(f"trial {trial}: eager {eager:.4f} graph {graph:.4f} v%2MiB {mods['v']} q%2MiB {mods['q']}", flush=True)
        del inp
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
