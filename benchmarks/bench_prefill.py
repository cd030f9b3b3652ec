"""Time one library's GDN prefill forward over the grid, in this process (one process per library).

python benchmarks/bench_prefill.py --lib flashqla|fla|flash_qla|flashinfer [--rows quick|all] --out r.json
CUDA events with the L2 flushed before every run (triton.testing.do_bench), median of many runs.
--placements P: each row at P memory placements (fresh inputs behind spacers), the median of the P medians.
"""

import argparse
import json
import os
import statistics
import sys
import time
import traceback

if "--lib" in sys.argv and sys.argv[sys.argv.index("--lib") + 1] == "fla":
    os.environ["FLA_FLASH_QLA"] = "0"  # time FLA's own Triton kernels, not its dispatch to FlashQLA
    os.environ["FLA_DISABLE_BACKEND_DISPATCH"] = "1"

import torch
import triton

sys.path.insert(0, os.path.dirname(__file__))
from grid import HEAD_CONFIGS, SEQ_LAYOUTS, device_kind, placed_inputs, seq_layout  # noqa: E402

QUICK = [("397B-TP1", "8192x4"), ("397B-TP1", "1024x8"), ("35B-TP1", "8192x4"), ("397B-TP8", "1x8192"),
         ("27B-TP1", "1x32768"), ("2B-TP1", "1024x8")]


def runner(lib: str):
    if lib == "flashqla":
        import flashqla

        def run(inp):
            return flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
        return run
    if lib == "fla":
        from fla.ops.gated_delta_rule import chunk_gated_delta_rule

        def run(inp):
            return chunk_gated_delta_rule(**inp, output_final_state=True)
        return run
    if lib == "flash_qla":
        from flash_qla import chunk_gated_delta_rule

        def run(inp):
            return chunk_gated_delta_rule(**inp, output_final_state=True)
        return run
    if lib == "flashinfer":
        from flashinfer.gdn_prefill import chunk_gated_delta_rule

        def prep(inp):  # outside the timed call: [T, H, 128] views, alpha = exp(g), state buffer
            N, HV = inp["initial_state"].shape[:2]
            return dict(q=inp["q"][0], k=inp["k"][0], v=inp["v"][0], g=inp["g"][0].exp(),
                        beta=inp["beta"][0], initial_state=inp["initial_state"].transpose(-1, -2).contiguous(),
                        cu_seqlens=inp["cu_seqlens"].long(),
                        output_state=torch.empty(N, HV, 128, 128, device="cuda", dtype=torch.float32))

        def run(inp):
            p = inp["_fi"]
            return chunk_gated_delta_rule(p["q"], p["k"], p["v"], g=p["g"], beta=p["beta"],
                                          initial_state=p["initial_state"], output_final_state=True,
                                          cu_seqlens=p["cu_seqlens"], output_state=p["output_state"])
        run.prep = prep
        return run
    raise ValueError(lib)


def time_kkt_solve(inp, rep):
    """flashqla's first launch alone (the rest of the row's time is the fused kernel): kkt_solve, or its
    rows-only pass where chunk_fwd forms the inverse itself."""
    import inspect

    from flashqla import dispatch, ops
    from flashqla.ops import kkt_solve

    q, k, beta, g = inp["q"][0], inp["k"][0], inp["beta"][0].float().contiguous(), inp["g"][0].float().contiguous()
    cu, off = dispatch.packed_seqlens(inp["cu_seqlens"], 1, q.shape[0], q.device)
    HV = beta.shape[1]
    if "chunk_table" in inspect.signature(kkt_solve).parameters:
        args = (dispatch.kkt_chunk_table(cu, off, q.shape[0]),)
    else:  # a package from before the chunk table (an A/B baseline): chunk slots found by search
        args = (cu, off)
    first = kkt_solve
    fused_bvs = getattr(ops, "FUSED_INVERSE_BLOCK_VS", ())
    pairs = (cu.numel() - 1) * HV
    sms = torch.cuda.get_device_properties(q.device).multi_processor_count
    block_v = dispatch.choose_block_v(pairs, sms)
    if hasattr(dispatch, "choose_fused_inverse"):  # chunk_fwd forms the inverse itself: the first launch is the
        fused = dispatch.choose_fused_inverse(q.shape[1], HV, pairs, sms, block_v, q.device, False)  # rows only
    else:  # a package from before the choice by card and shape
        fused = bool(fused_bvs) and getattr(ops, "FUSED_INVERSE", True) and block_v in fused_bvs
    if fused:
        first = ops.kkt_rows
    return triton.testing.do_bench(lambda: first(k, beta, g, *args, HV, False), warmup=25, rep=rep,
                                   return_mode="median")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--rows", default="quick", help='"quick", "all" or "HEAD/SEQS,HEAD/SEQS,..."')
    ap.add_argument("--out", required=True)
    ap.add_argument("--rep", type=int, default=200, help="do_bench rep (ms)")
    ap.add_argument("--warmup", type=int, default=25,
                    help="do_bench warmup (ms). 25 (the grid's): after ~0.5 s of a long row's load an H200 reaches "
                         "its 700 W cap and its SM clock drops ~12%, so a longer warmup times the capped clock "
                         "(results/2026-11-27-h200-s36/scaling_probe)")
    ap.add_argument("--host", action="store_true", help="also the host time per call (us), 50 calls without a sync")
    ap.add_argument("--breakdown", action="store_true", help="flashqla: also time kkt_solve alone")
    ap.add_argument("--placements", type=int, default=1,
                    help="time each row at this many memory placements (fresh inputs behind spacers of different "
                         "sizes) and report the median: a long row's time moves by several percent with where its "
                         "tensors land, for every library (results/2026-11-24-h200-s17/placement)")
    args = ap.parse_args()
    if args.rows == "quick":
        rows = QUICK
    elif args.rows == "all":
        rows = [(h, s) for h in HEAD_CONFIGS for s in SEQ_LAYOUTS]
    else:  # "HEAD/SEQS,HEAD/SEQS,...", e.g. "2B-TP1/1024x8,397B-TP4/1024x8"
        rows = [tuple(r.split("/")) for r in args.rows.split(",")]
    results = {"lib": args.lib, "device": torch.cuda.get_device_name(), "kind": device_kind(),
               "torch": torch.__version__, "rows": []}
    try:
        run = runner(args.lib)
    except Exception as e:  # the peer cannot run here: say so for every row
        results["error"] = f"{type(e).__name__}: {e}"
        json.dump(results, open(args.out, "w"), indent=1)
        print(f"{args.lib}: cannot run: {results['error']}")
        return
    for head, seqs in rows:
        H, HV = HEAD_CONFIGS[head]
        row = {"head": head, "seqs": seqs}
        try:
            times = []
            for p, inp in placed_inputs(H, HV, seq_layout(seqs), args.placements):
                if hasattr(run, "prep"):
                    inp["_fi"] = run.prep(inp)
                run(inp)
                torch.cuda.synchronize()
                times.append(triton.testing.do_bench(lambda: run(inp), warmup=args.warmup, rep=args.rep, return_mode="median"))
                if p + 1 < args.placements:
                    inp = None
            row["ms"] = statistics.median(times)
            if args.placements > 1:
                row["ms_placements"] = times
            if args.host:  # host time per call: calls issued back to back without a sync (host-bound rows)
                torch.cuda.synchronize()
                t_host = time.perf_counter()
                for _ in range(50):
                    run(inp)
                row["host_us"] = (time.perf_counter() - t_host) / 50 * 1e6
                torch.cuda.synchronize()
            if args.lib == "flashqla" and args.breakdown:
                row["kkt_solve_ms"] = time_kkt_solve(inp, args.rep)
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {str(e)[:200]}"
            traceback.print_exc()
        results["rows"].append(row)
        print(f"{args.lib:10s} {head:9s} {seqs:12s} {row.get('ms', row.get('error'))} kkt={row.get('kkt_solve_ms')}"
              + (f" host_us={row['host_us']:.0f}" if "host_us" in row else ""), flush=True)
        inp = None
        torch.cuda.empty_cache()
        json.dump(results, open(args.out, "w"), indent=1)  # after every row: a timeout keeps what ran
    json.dump(results, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
