"""DIAGNOSTIC (session 41): clock64 stamps of CTA 0 of the fused chunk_fwd (a build with `stamps=True`, selected by
FLASHQLA_DIAG_STAMPS=1 with FLASHQLA_FUSED_INVERSE=1): per chunk, when the state warpgroups' stage lands, when they
wait for A~ and get it, when the chunk ends, and the auxiliary warpgroup's stage, K K^T, inverse, p_used and
hand-over times, in cycles from the state's first stamp.

python benchmarks/stamps_probe.py --row 2B-TP1/1024x8 --out stamps.json
"""
import argparse, ctypes, json, os, sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from grid import HEAD_CONFIGS, make_inputs, seq_layout  # noqa: E402

EVENTS = {0: "s_stage", 9: "s_factors", 1: "s_wait_A", 2: "s_got_A", 3: "s_done",
          4: "a_stage", 5: "a_kk", 6: "a_inv", 7: "a_pused", 8: "a_handed"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--row", default="2B-TP1/1024x8")
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    import flashqla
    from flashqla import loader
    head, seqs = args.row.split("/")
    H, HV = HEAD_CONFIGS[head]
    inp = make_inputs(H, HV, seq_layout(seqs))
    res = []
    for r in range(args.runs):
        flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
        torch.cuda.synchronize()
        libs = [b.lib for b in loader._LOADED.values() if hasattr(b.lib, "flashqla_read_stamps")]
        assert libs, "no loaded binary with stamps (FLASHQLA_DIAG_STAMPS=1, FLASHQLA_FUSED_INVERSE=1?)"
        buf = (ctypes.c_ulonglong * (16 * 64))()
        assert libs[0].flashqla_read_stamps(buf, 16 * 64) == 0
        raw = list(buf)
        n = sum(1 for c in range(64) if raw[c])  # chunks stamped by the state
        t0 = raw[0]
        rows = []
        for c in range(n):
            rows.append({name: raw[ev * 64 + c] - t0 for ev, name in EVENTS.items()})
        res.append(rows)
    last = res[-1]
    print("chunk " + " ".join(f"{n:>9}" for n in EVENTS.values()))
    for c, row in enumerate(last):
        print(f"{c:5d} " + " ".join(f"{row[n]:9d}" for n in EVENTS.values()))
    # summaries (cycles): per chunk the state's step, its wait for A~, the aux's step, the aux's inverse, its p_used wait
    def med(xs):
        xs = sorted(xs); return xs[len(xs) // 2] if xs else None
    summ = {}
    for rows in res:
        for c in range(2, len(rows)):
            for k, v in {"state_step": rows[c]["s_stage"] - rows[c - 1]["s_stage"],
                         "state_wait_A": rows[c]["s_got_A"] - rows[c]["s_wait_A"],
                         "aux_step": rows[c]["a_handed"] - rows[c - 1]["a_handed"],
                         "aux_kk": rows[c]["a_kk"] - rows[c]["a_stage"],
                         "aux_inverse": rows[c]["a_inv"] - rows[c]["a_kk"],
                         "aux_wait_pused": rows[c]["a_pused"] - rows[c]["a_inv"],
                         "aux_lead": rows[c]["s_wait_A"] - rows[c]["a_handed"]}.items():
                summ.setdefault(k, []).append(v)
    summary = {k: med(v) for k, v in summ.items()}
    print(json.dumps(summary))
    json.dump({"row": args.row, "runs": res, "median_cycles": summary}, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
