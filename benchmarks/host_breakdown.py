"""Where the host time of one flashqla forward goes: inclusive microseconds per call of each step.

python benchmarks/host_breakdown.py [--out r.json] [--tag name]
Wraps the steps of the launch path (validation, the plan, the cu_seqlens caches, packing, allocation,
each launch) with perf_counter accumulators, runs the forward on short rows (the GPU queue is drained
every 20 calls, so a launch never waits for queue space), and prints each step's share. The package
imported is whichever `flashqla` is first on the path, so two versions compare in one process each.
"""

import argparse
import collections
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from grid import HEAD_CONFIGS, SEQ_LAYOUTS, make_inputs  # noqa: E402

ROWS = [("2B-TP1", "1x2048"), ("397B-TP4", "1024x8"), ("397B-TP1", "1024x8")]
STEPS = [("fast_path", "signature"), ("fast_path", "run"), ("api", "validate_inputs"), ("api", "try_chunk_forward"), ("dispatch", "_plan"), ("dispatch", "kernel_plan"),
         ("dispatch", "sm_count"), ("dispatch", "packed_seqlens"), ("dispatch", "kkt_chunk_table"),
         ("dispatch", "_packed"), ("ops", "chunk_fwd"), ("ops", "kkt_solve"), ("ops", "_launch"),
         ("ops", "_state_outputs"), ("loader", "Binary.__call__")]
acc = collections.Counter()


def wrap(mod, name):
    owner, attr = (getattr(mod, name.split(".")[0]), name.split(".")[1]) if "." in name else (mod, name)
    fn = getattr(owner, attr, None)
    if fn is None:
        return

    def timed(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            acc[name] += time.perf_counter() - t

    for keep in ("op", "register_fake"):
        if hasattr(fn, keep):
            setattr(timed, keep, getattr(fn, keep))
    setattr(owner, attr, timed)


def timed_forwards(flashqla, inp, calls: int) -> float:
    """Host microseconds per forward call (30 warm-up calls; the GPU queue drained every 20 calls)."""
    for _ in range(30):
        flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    torch.cuda.synchronize()
    total = 0.0
    for i in range(calls):
        t = time.perf_counter()
        flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
        total += time.perf_counter() - t
        if i % 20 == 19:
            torch.cuda.synchronize()
    return 1e6 * total / calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--tag", default="")
    ap.add_argument("--calls", type=int, default=600)
    args = ap.parse_args()
    import importlib

    import flashqla
    out = {"tag": args.tag, "flashqla_path": os.path.dirname(flashqla.__file__), "rows": []}
    inputs = {}
    for head, seqs in ROWS:  # the whole forward first, with no step timers in the way
        H, HV = HEAD_CONFIGS[head]
        inputs[head, seqs] = inp = make_inputs(H, HV, SEQ_LAYOUTS[seqs])
        out["rows"].append({"head": head, "seqs": seqs, "plain_forward_us": timed_forwards(flashqla, inp, args.calls)})
    for modname, name in STEPS:
        try:
            wrap(importlib.import_module(f"flashqla.{modname}"), name)
        except ImportError:  # an older package without this module
            pass
    for row in out["rows"]:
        acc.clear()
        n = args.calls
        row["forward_us"] = timed_forwards(flashqla, inputs[row["head"], row["seqs"]], n)
        row["steps_us"] = {k: 1e6 * v / n for k, v in acc.items()}
        print(f"[{args.tag}] {row['head']} {row['seqs']}: plain forward {row['plain_forward_us']:.1f} us/call, "
              f"with step timers {row['forward_us']:.1f}; "
              + ", ".join(f"{k} {v:.1f}" for k, v in sorted(row["steps_us"].items(), key=lambda kv: -kv[1])),
              flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
