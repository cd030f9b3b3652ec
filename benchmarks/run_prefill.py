"""Run the prefill benchmark for every library (one process each), print the markdown table, write JSON + plot.

python benchmarks/run_prefill.py [--rows quick|all] [--libs flashqla,flash_qla,flashinfer,fla] --out DIR
"""

import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
PEER_NAMES = {"fla": "FLA", "flash_qla": "FlashQLA", "flashinfer": "FlashInfer"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", default="quick")
    ap.add_argument("--libs", default="flashqla,flash_qla,flashinfer,fla")
    ap.add_argument("--out", required=True)
    ap.add_argument("--rep", default="200")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    per_lib = {}
    for lib in args.libs.split(","):
        path = os.path.join(args.out, f"bench_{lib}.json")
        proc = subprocess.run([sys.executable, os.path.join(HERE, "bench_prefill.py"), "--lib", lib,
                               "--rows", args.rows, "--out", path, "--rep", args.rep, "--breakdown"])
        if proc.returncode != 0 or not os.path.exists(path):
            per_lib[lib] = {"error": f"process exited with {proc.returncode}", "rows": []}
        else:
            per_lib[lib] = json.load(open(path))
    report(per_lib, args.out)


def report(per_lib: dict, out_dir: str) -> dict:
    """Merge per-library results into the markdown table, prefill.json and the speedup plot."""
    from grid import HEAD_CONFIGS, SEQ_LAYOUTS, floor_seconds

    devices = {d.get("device") for d in per_lib.values() if d.get("device")}
    device = ", ".join(sorted(devices))
    kind = "H200" if "H200" in device else "H100"
    keys = []
    for r in per_lib.get("flashqla", {}).get("rows", []):
        keys.append((r["head"], r["seqs"]))
    table, merged = [], []
    peers = [p for p in ("fla", "flash_qla", "flashinfer") if p in per_lib]
    hdr = "| head cfg (hk/hv) | seqs | " + " | ".join(PEER_NAMES[p] for p in peers) + \
        " | flashqla | best peer | speedup | floor | flashqla % floor | best peer % floor |"
    table.append(hdr)
    table.append("|" + "---|" * (hdr.count("|") - 1))

    def ms(lib, key):
        d = per_lib.get(lib, {})
        if "error" in d and not d.get("rows"):
            return None, "not run" if d["error"] == "not run" else "cannot run"
        for r in d.get("rows", []):
            if (r["head"], r["seqs"]) == key:
                return (r["ms"], None) if "ms" in r else (None, "failed")
        return None, "not run"

    speedups = []
    for key in keys:
        H, HV = HEAD_CONFIGS[key[0]]
        floor_ms = floor_seconds(H, HV, SEQ_LAYOUTS[key[1]], kind) * 1e3
        ours, _ = ms("flashqla", key)
        cells, best, best_name = [], None, None
        for p in peers:
            t, why = ms(p, key)
            cells.append(f"{t:.3f}" if t is not None else why)
            if t is not None and (best is None or t < best):
                best, best_name = t, PEER_NAMES[p]
        sp = best / ours if (best and ours) else None
        n_pairs = len(SEQ_LAYOUTS[key[1]]) * HV
        if sp:
            speedups.append((key, sp, n_pairs))
        kkt = next((r.get("kkt_solve_ms") for r in per_lib["flashqla"]["rows"]
                    if (r["head"], r["seqs"]) == key), None)
        merged.append({"head": key[0], "seqs": key[1], "flashqla_ms": ours, "flashqla_kkt_solve_ms": kkt,
                       "best_peer_ms": best,
                       "best_peer": best_name, "speedup": sp, "floor_ms": floor_ms, "pairs": n_pairs,
                       **{f"{p}_ms": ms(p, key)[0] for p in peers}})
        table.append(f"| {key[0]} ({H}/{HV}) | {key[1]} | " + " | ".join(cells) +
                     f" | {ours:.3f} | {best:.3f} ({best_name}) | {sp:.2f}x | {floor_ms:.3f} | "
                     f"{100 * floor_ms / ours:.0f}% | {100 * floor_ms / best:.0f}% |"
                     if (ours and best) else
                     f"| {key[0]} ({H}/{HV}) | {key[1]} | " + " | ".join(cells) +
                     f" | {ours} | {best} | - | {floor_ms:.3f} | - | - |")
    full = [s for k, s, n in speedups if n >= 64]
    summary = {
        "device": device, "kind": kind,
        "geomean_speedup_all": math.exp(sum(math.log(s) for _, s, _ in speedups) / len(speedups)) if speedups else None,
        "geomean_speedup_pairs_ge_64": math.exp(sum(math.log(s) for s in full) / len(full)) if full else None,
        "min_speedup_pairs_ge_64": min(full) if full else None,
        "libs": {lib: {k: v for k, v in d.items() if k != "rows"} for lib, d in per_lib.items()},
    }
    json.dump({"summary": summary, "rows": merged}, open(os.path.join(out_dir, "prefill.json"), "w"), indent=1)
    md = "\n".join(table)
    open(os.path.join(out_dir, "prefill.md"), "w").write(md + "\n\n" + json.dumps(summary, indent=1) + "\n")
    print(md)
    print(json.dumps(summary, indent=1))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(10, max(3, 0.3 * len(speedups))))
        labels = [f"{k[0]} {k[1]}" for k, _, _ in speedups]
        ax.barh(labels, [s for _, s, _ in speedups], color=["C2" if s >= 1 else "C3" for _, s, _ in speedups])
        ax.axvline(1.0, color="k", lw=1)
        ax.set_xlabel(f"speedup of flashqla over the best peer ({summary['device']})")
        fig.tight_layout()
        fig.savefig(os.path.join(out_dir, "prefill_speedup.png"), dpi=100)
    except Exception as e:  # plotting must not lose the numbers
        print("plot failed:", e)
    return summary


if __name__ == "__main__":
    main()
