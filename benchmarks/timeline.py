"""Kernel timeline of flashqla's forward per row (torch.profiler / CUPTI): where a row's time goes between the
kernels, and how chunk_fwd's time splits into the chunk steps and what each wave of CTAs costs besides them.

python benchmarks/timeline.py --rows 397B-TP1/8192x4,397B-TP1/1024x8 --iters 20 --out timeline.json

Each iteration flushes L2 (a 256 MB write, as triton.testing.do_bench does) and runs one forward; the profiler's
kernel records (start, duration) give, per iteration, every flashqla kernel's duration, the gaps between them,
and the span from the first kernel's start to the last one's end. Medians over the iterations are reported.
"""

import argparse
import json
import os
import statistics
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from grid import HEAD_CONFIGS, device_kind, make_inputs, seq_layout  # noqa: E402

FLUSH_BYTES = 256 << 20
FLUSH_MIN_US = 30  # a kernel this long with a fill's name is the flush (the forward's own elementwise kernels are short)


def kernel_events(prof):
    """(name, start us, duration us) of every CUDA kernel the profiler saw, in start order."""
    out = []
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and e.time_range.elapsed_us() > 0:
            out.append((e.name, e.time_range.start, e.time_range.elapsed_us()))
    return sorted(out, key=lambda x: x[1])


def split_iterations(events):
    """Groups of flashqla kernels, one a forward: every kernel after a flush kernel (the L2 write) up to the next."""
    groups, cur = [], None
    for name, start, dur in events:
        if dur > FLUSH_MIN_US and ("elementwise" in name.lower() or "fill" in name.lower()):
            if cur:
                groups.append(cur)
            cur = {"flush_end": start + dur, "kernels": []}
        elif cur is not None:
            cur["kernels"].append((name, start, dur))
    if cur and cur["kernels"]:
        groups.append(cur)
    return [g for g in groups if g["kernels"]]


def profiled_iterations(call, flush, iters):
    """The kernel groups (split_iterations) of iters profiled forwards, each after flush.zero_() (the L2 write)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            flush.zero_()
            call()
        torch.cuda.synchronize()
    return split_iterations(kernel_events(prof))


def short(name):
    for key in ("kkt_solve_gva", "kkt_solve", "kkt_rows", "chunk_fwd", "recurrent"):
        if key in name:
            return key
    return name[:40]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", required=True, help='"HEAD/SEQS,HEAD/SEQS,..."')
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--out", required=True)
    ap.add_argument("--states", default="h0,ht", help='which states the forward reads and writes: "h0,ht", "h0", '
                    '"ht" or "none" (a diagnostic of what loading and storing them costs)')
    ap.add_argument("--lib", default="flashqla", help="flashqla (default) or a peer bench_prefill.py runs "
                    "(e.g. flashinfer): its kernels after each flush, the same inputs (the peer's prep outside)")
    ap.add_argument("--l2norm", action="store_true", help="q and k normalised inside the kernels "
                    "(use_qk_l2norm_in_kernel=True, as transformers' GDN layers call it)")
    args = ap.parse_args()
    with_h0, with_ht = "h0" in args.states, "ht" in args.states
    import flashqla
    peer = None
    if args.lib != "flashqla":
        from bench_prefill import runner
        peer = runner(args.lib)

    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    res = {"device": torch.cuda.get_device_name(), "kind": device_kind(), "torch": torch.__version__, "rows": []}
    for row in args.rows.split(","):
        head, seqs = row.split("/")
        H, HV = HEAD_CONFIGS[head]
        inp = make_inputs(H, HV, seq_layout(seqs))
        if not with_h0:
            inp["initial_state"] = None
        if args.l2norm:
            inp["use_qk_l2norm_in_kernel"] = True
        if peer is not None:  # the grid's inputs and call, as bench_prefill.py times the peer
            if hasattr(peer, "prep"):
                inp["_fi"] = peer.prep(inp)

            def call():
                return peer(inp)
        else:
            def call():
                return flashqla.chunk_gated_delta_rule(**inp, output_final_state=with_ht)
        for _ in range(5):
            call()
        torch.cuda.synchronize()
        groups = profiled_iterations(call, flush, args.iters)
        per = {}
        spans, lead, busy = [], [], []
        for g in groups:
            ks = g["kernels"]
            spans.append(ks[-1][1] + ks[-1][2] - ks[0][1])
            busy.append(sum(k[2] for k in ks))
            lead.append(ks[0][1] - g["flush_end"])
            for i, (name, start, dur) in enumerate(ks):
                key = f"{i}:{short(name)}"
                per.setdefault(key, {"dur": [], "gap_before": []})
                per[key]["dur"].append(dur)
                if i:
                    prev = ks[i - 1]
                    per[key]["gap_before"].append(start - (prev[1] + prev[2]))
        med = {k: {"dur_us": statistics.median(v["dur"]),
                   "gap_before_us": statistics.median(v["gap_before"]) if v["gap_before"] else None}
               for k, v in per.items()}
        out = {"lib": args.lib, "head": head, "seqs": seqs, "states": args.states, "l2norm": args.l2norm, "iters": len(groups),
               "span_us": statistics.median(spans) if spans else None,
               "busy_us": statistics.median(busy) if busy else None,
               "flush_to_first_us": statistics.median(lead) if lead else None, "kernels": med}
        res["rows"].append(out)
        print(json.dumps(out), flush=True)
        inp = None
        torch.cuda.empty_cache()
        json.dump(res, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
