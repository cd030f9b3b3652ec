"""Means over seeds, paired differences against kernel_f16 (today's kernel), GPU comparison: summary.json.

python benchmarks/results/2026-11-26-h100-s28/inverse_f16_emulation/summarize.py
"""
import json
import os
import statistics as st

HERE = os.path.dirname(os.path.abspath(__file__))
GPU = {"1x65536": {"31": (0.003919580114287497, 0.00315535172116262), "32": (0.003922264826430232, 0.003101599063367245),
                   "33": (0.003924819108395071, 0.0031445399827301204)},
       "ragged": {"31": (0.0039151717051065914, 0.0030505233386936676), "32": (0.003914729077050592, 0.0030750492390588884),
                  "33": (0.0039065011229371446, 0.003089487177522988)}}  # results/2026-11-26-h100-s28/accuracy
FLASHQLA = {"1x65536": (4.444e-3, 3.834e-3), "ragged": (4.388e-3, 3.574e-3)}
MAIN = json.load(open(os.path.join(HERE, "results.json")))
EXTRA = json.load(open(os.path.join(HERE, "results_extra_seeds.json")))
NAMES = ["kernel_f16", "exact", "fi_f16", "fi_f16_gatedL", "fi_f16_diag16", "kernel_f16_Af16", "fi_f16_Af16", "exact_Afp32"]


def table(seeds):
    out = {}
    for n in NAMES:
        o = [s[n]["o"] for s in seeds.values()]
        h = [s[n]["final_state"] for s in seeds.values()]
        do = [(s[n]["o"] / s["kernel_f16"]["o"] - 1) * 100 for s in seeds.values()]
        dh = [(s[n]["final_state"] / s["kernel_f16"]["final_state"] - 1) * 100 for s in seeds.values()]
        sd = (lambda x: st.stdev(x) / len(x) ** 0.5 if len(x) > 1 else float("nan"))
        out[n] = {"o": st.mean(o), "final_state": st.mean(h), "n_seeds": len(o),
                  "o_vs_kernel_pct": st.mean(do), "o_vs_kernel_pct_sem": sd(do),
                  "state_vs_kernel_pct": st.mean(dh), "state_vs_kernel_pct_sem": sd(dh)}
    return out


summary = {}
for case, c in MAIN["cases"].items():
    summary[case + " seeds 31-33"] = table(c["seeds"])
    g = GPU[case]
    k = {s: (c["seeds"][s]["kernel_f16"]["o"], c["seeds"][s]["kernel_f16"]["final_state"]) for s in g}
    summary[case + " GPU vs kernel_f16"] = {
        "gpu_mean": [st.mean(v[0] for v in g.values()), st.mean(v[1] for v in g.values())],
        "emul_mean": [st.mean(v[0] for v in k.values()), st.mean(v[1] for v in k.values())],
        "per_seed_pct": {s: [(k[s][0] / g[s][0] - 1) * 100, (k[s][1] / g[s][1] - 1) * 100] for s in g},
        "flashqla_measured": FLASHQLA[case]}
all_ragged = {**MAIN["cases"]["ragged"]["seeds"], **EXTRA["cases"]["ragged"]["seeds"]}
summary["ragged seeds 31-41"] = table(all_ragged)
json.dump(summary, open(os.path.join(HERE, "summary.json"), "w"), indent=1)
for key, t in summary.items():
    print(key)
    if "GPU" in key:
        print("  ", json.dumps(t))
        continue
    for n, r in t.items():
        print(f"  {n:16s} o {r['o']:.4e} st {r['final_state']:.4e} (n={r['n_seeds']}) vs kernel_f16: o "
              f"{r['o_vs_kernel_pct']:+.2f}% +-{r['o_vs_kernel_pct_sem']:.2f}  st {r['state_vs_kernel_pct']:+.2f}% "
              f"+-{r['state_vs_kernel_pct_sem']:.2f}")
