"""Emulate flashqla's bf16 rounding points (and alternatives) in float64 on CPU, against the float64 recurrence.

python benchmarks/results/2026-11-24-h200-s14/beta_on_w_ab/emulation/emulate.py [--seeds 31,32,33] [--out /tmp/acc_emul/results.json]

Inputs: make_inputs of tests/test_gpu_kernels.py (CPU generator -> identical to the GPU runs'),
ragged case [1000, 4097, 63, 20000], H=2, HV=4. Reference: reference.naive_recurrent_gated_delta_rule_f64.
"""

import argparse
import json
import os
import sys
import time

import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 5))  # the repository
for sub in ("tests", "torch-ext", "benchmarks"):
    sys.path.insert(0, os.path.join(ROOT, sub))
os.environ.setdefault("FLASHQLA_POISON", "0")

torch.set_num_threads(8)

C = 64
SEQS, H, HV = [1000, 4097, 63, 20000], 2, 4


def rb(x):
    """round to bf16, keep the working dtype"""
    return x.to(torch.bfloat16).to(x.dtype)


def ident(x):
    return x


# variant -> dict of switches
VARIANTS = {
    "kernel": {},
    "fla_style": {"algebra": "fla", "a_round": False},          # u = bf16(A~ V), w = bf16(A~ gamma K), A~ fp32
    "fla_style_Abf16": {"algebra": "fla", "a_round": True},     # same with A~ rounded once to bf16
    "fla_exact": {"algebra": "fla_exact"},                      # FLA's roundings: bf16 A(no beta), bf16(beta v),
                                                                # bf16(beta exp(G) k), P unscaled bf16
    "w_fp32": {"w_round": False},
    "a_fp32": {"a_round": False},
    "state_update_fp32": {"su_round": False},
    "sb_fp32": {"sb_round": False},
    "vn_fp32": {"vn_round": False},                             # Vn unrounded in O (P Vn)
    "p_fp32": {"p_round": False},
    "o_fp32": {"o_round": False},                               # no final output rounding
    "su_from_vnb": {"su_mode": "vnb"},                          # state operand bf16(d * bf16(Vn))
    "beta_on_w": {"beta_on_w": True},
    "beta_on_p": {"beta_on_p": True},
    "beta_on_vn": {"beta_on_p": True, "vn_beta": True},         # as beta_on_p, beta on Vn' rows for O instead of P                           # Y = (I + N diag(beta))^-1, Vn' = (Y.Gamma) W, beta on P and d
    "beta_on_w_vb16": {"beta_on_w": True, "vb16": True},         # as beta_on_w, beta v rounded to bf16 first (packed HMUL2)                           # A~ without beta (X (.) Gamma), W = bf16(beta (V - gamma Z))
    "w_and_a_fp32": {"w_round": False, "a_round": False},
    "all_fp32_but_io": {"w_round": False, "a_round": False, "su_round": False, "sb_round": False,
                        "vn_round": False, "p_round": False},   # only bf16 inputs and bf16 o: the floor
    "kernel_f32": {"dtype": torch.float32},                     # kernel algebra with fp32 products (check)
    "flashqla_hopper_nocp": {"a_double": True},                 # FlashQLA's fused_fwd algebra, no auto_cp
    "flashqla_hopper_cp": {"a_double": True, "cp": "fp32"},     # + auto_cp (8-chunk segments, prepare_h, fp32 chain)
    "flashqla_hopper_cp_bf16chain": {"a_double": True, "cp": "bf16"},
    "flashqla_hopper_cp_bf16buf": {"a_double": True, "cp": "buf"},  # + ht, mt buffers bf16 (as FlashQLA stores them)
    "kernel_cp": {"cp": "fp32"},                                # flashqla's algebra inside FlashQLA's segments
}


def chunk_inverse(kc, bc, G, dt):
    """X = (I + strict_lower(diag(beta) K K^T))^-1 (gate-free, beta not applied), Gamma. kc [HV,c,K]"""
    c = kc.shape[1]
    eye = torch.eye(c, dtype=torch.float64)
    kk = kc.double() @ kc.double().transpose(-1, -2)
    L = (bc.double().unsqueeze(-1) * kk).tril(-1)
    X = torch.linalg.solve_triangular(eye + L, eye.expand_as(L), upper=False, unitriangular=True)
    causal = torch.ones(c, c, dtype=torch.bool).tril()
    Gd = G.double()
    Gamma = (Gd.unsqueeze(-1) - Gd.unsqueeze(-2)).masked_fill(~causal, float("-inf")).exp()
    return X.to(dt), Gamma.to(dt)


def run_variant(inp, opts):
    dt = opts.get("dtype", torch.float64)
    R = lambda flag: rb if opts.get(flag, True) else ident  # noqa: E731
    r_w, r_a, r_su, r_sb, r_vn, r_p, r_o = (R(f) for f in ("w_round", "a_round", "su_round", "sb_round",
                                                          "vn_round", "p_round", "o_round"))
    algebra = opts.get("algebra", "kernel")
    q, k, v = inp["q"][0], inp["k"][0], inp["v"][0]          # [T,H,K] bf16 ; v [T,HV,V]
    g, beta, h0, cu = inp["g"][0], inp["beta"][0], inp["initial_state"], inp["cu_seqlens"].tolist()
    kh = torch.arange(HV) // (HV // H)
    q = q[:, kh].to(dt).transpose(0, 1)                        # [HV,T,K] exact bf16 values
    k = k[:, kh].to(dt).transpose(0, 1)
    v = v.to(dt).transpose(0, 1)
    g = g.float().transpose(0, 1)                             # fp32 [HV,T]
    beta = beta.float().transpose(0, 1)
    scale = 128 ** -0.5
    o = torch.zeros_like(v)
    states = []
    segs = opts.get("segments") or [(cu[n], cu[n + 1], h0[n]) for n in range(len(cu) - 1)]
    for (s, e, hinit) in segs:
        S = hinit.to(dt).clone()                              # [HV,K,V]
        for c0 in range(s, e, C):
            c1 = min(c0 + C, e)
            qc, kc, vc = q[:, c0:c1], k[:, c0:c1], v[:, c0:c1]
            bc = beta[:, c0:c1]
            G = g[:, c0:c1].cumsum(-1)                        # fp32 chunk-local cumsum (kkt_solve)
            X, Gamma = chunk_inverse(kc, bc, G, dt)
            G = G.to(dt)
            gamma = G.exp().unsqueeze(-1)                     # [HV,c,1]
            d = (G[:, -1:] - G).exp().unsqueeze(-1)
            gl = G[:, -1].exp()[:, None, None]
            bcd = bc.to(dt).unsqueeze(-1)
            Sb = r_sb(S)
            if algebra == "kernel":
                if opts.get("beta_on_p"):
                    kk = kc.double() @ kc.double().transpose(-1, -2)
                    Lc = (kk * bc.double().unsqueeze(-2)).tril(-1)
                    eye = torch.eye(c1 - c0, dtype=torch.float64)
                    Y = torch.linalg.solve_triangular(eye + Lc, eye.expand_as(Lc), upper=False, unitriangular=True)
                    At = r_a(Y.to(dt) * Gamma)
                    W = r_w(vc - gamma * (kc @ Sb))
                elif opts.get("beta_on_w"):
                    At = r_a(X * Gamma)
                    if opts.get("vb16"):
                        W = r_w(rb(bcd * vc) - bcd * gamma * (kc @ Sb))
                    else:
                        W = r_w(bcd * (vc - gamma * (kc @ Sb)))
                elif opts.get("a_double"):
                    At = rb(rb(X) * Gamma * bc.to(dt).unsqueeze(-2))  # FlashQLA: X stored bf16, gated in the fwd
                    W = r_w(vc - gamma * (kc @ Sb))
                else:
                    At = r_a(X * bc.to(dt).unsqueeze(-2) * Gamma)   # A = X diag(beta), gated, one rounding
                    W = r_w(vc - gamma * (kc @ Sb))
                Vn = At @ W
            elif algebra == "fla":
                At = r_a(X * bc.to(dt).unsqueeze(-2) * Gamma)
                u = rb(At @ vc)
                w = rb(At @ (gamma * kc))
                Vn = u - w @ Sb
            elif algebra == "fla_exact":
                Af = rb(X * Gamma)                            # FLA's A (gated, no beta), stored bf16
                u = rb(Af @ rb(bcd * vc))
                w = rb(Af @ rb(bcd * gamma * kc))
                Vn = u - w @ Sb
            vn_b = r_vn(Vn)
            if opts.get("beta_on_p"):  # Vn here is Vn' (no beta): beta enters P's columns and the state update's d
                if opts.get("vn_beta"):
                    P = r_p((qc @ kc.transpose(-1, -2)) * Gamma * scale)
                    oc = (qc @ Sb) * (gamma * scale) + P @ r_vn(bcd * Vn)
                else:
                    P = r_p((qc @ kc.transpose(-1, -2)) * Gamma * scale * bc.to(dt).unsqueeze(-2))
                    oc = (qc @ Sb) * (gamma * scale) + P @ vn_b
                o[:, c0:c1] = r_o(oc)
                U = r_su(d * bcd * Vn)
                S = gl * S + kc.transpose(-1, -2) @ U
                continue
            if algebra == "fla_exact":
                P = r_p((qc @ kc.transpose(-1, -2)) * Gamma)
                oc = scale * ((qc @ Sb) * gamma) + scale * (P @ vn_b)
            else:
                P = r_p((qc @ kc.transpose(-1, -2)) * Gamma * scale)
                oc = (qc @ Sb) * (gamma * scale) + P @ vn_b
            o[:, c0:c1] = r_o(oc)
            if opts.get("su_mode") == "vnb":
                U = rb(d * rb(Vn))
            else:
                U = r_su(d * Vn)
            S = gl * S + kc.transpose(-1, -2) @ U
        states.append(S)
    if opts.get("segments"):
        states = [states[i] for i in opts["last_seg"]]
    return o.transpose(0, 1).unsqueeze(0).double(), torch.stack(states).double()


def cp_segments(inp, chain_round, seg_chunks=8, threshold=-10.0):
    """FlashQLA auto_cp (H200: 132 SMs -> 8-chunk segments here): per segment and head, the local state from zero
    and the transition M by the prepare_h algebra (X = bf16 gate-free inverse; Xk = bf16(-beta (X^T K));
    Y = bf16(gl K bf16(S) - d V); S = gl S + Xk^T Y; M += Xk^T bf16(K bf16(M)), times the segment decay at the
    end); heads whose decay over the trailing chunks reaches `threshold` use only those chunks (fallback, no M);
    the chain h_{i+1} = M_i h_i + ht_i in fp32 (chain_round: M and h rounded to bf16 in the product)."""
    dt = torch.float64
    k, v = inp["k"][0], inp["v"][0]
    g, beta, h0, cu = inp["g"][0], inp["beta"][0], inp["initial_state"], inp["cu_seqlens"].tolist()
    kh = torch.arange(HV) // (HV // H)
    k = k[:, kh].to(dt).transpose(0, 1)
    v = v.to(dt).transpose(0, 1)
    g = g.float().transpose(0, 1)
    beta = beta.float().transpose(0, 1)
    segs, last = [], []
    for n in range(len(cu) - 1):
        s0, e0 = cu[n], cu[n + 1]
        nch = -(-(e0 - s0) // C)
        if nch <= seg_chunks:
            segs.append((s0, e0, h0[n])); last.append(len(segs) - 1); continue
        bounds = list(range(s0, e0, seg_chunks * C)) + [e0]
        h = h0[n].to(dt).clone()
        for i in range(len(bounds) - 1):
            a, b = bounds[i], bounds[i + 1]
            segs.append((a, b, h.clone()))
            if i == len(bounds) - 2:
                break
            hn = torch.empty_like(h)
            for hv in range(HV):
                chunks = list(range(a, b, C))
                # warmup: trailing chunks until their summed decay reaches the threshold
                acc, nw = 0.0, 0
                for c0 in reversed(chunks):
                    nw += 1
                    acc += float(g[hv, c0:min(c0 + C, b)].sum())
                    if acc < threshold:
                        break
                use = chunks[len(chunks) - nw:]
                calc_m = nw >= len(chunks)
                S = torch.zeros(128, 128, dtype=dt)
                M = torch.eye(128, dtype=dt)
                gsum = 0.0
                for c0 in use:
                    c1 = min(c0 + C, b)
                    kc, vc, bc = k[hv, c0:c1], v[hv, c0:c1], beta[hv, c0:c1]
                    G = g[hv, c0:c1].cumsum(-1)
                    X, _ = chunk_inverse(kc[None], bc[None], G[None], dt)
                    X = rb(X[0])
                    G = G.to(dt)
                    gl = G[-1].exp()
                    d = (G[-1] - G).exp().unsqueeze(-1)
                    Xk = rb(-bc.to(dt).unsqueeze(-1) * (X.T @ kc))
                    Y = rb(gl * (kc @ rb(S)) - d * vc)
                    S = gl * S + Xk.T @ Y
                    if calc_m:
                        gsum += float(g[hv, c0:c1].sum())
                        M = M + Xk.T @ rb(kc @ rb(M))
                if calc_m:
                    M = M * torch.exp(torch.tensor(gsum, dtype=dt))
                    if chain_round == "buf":   # CP buffers ht, mt in bf16 (prepare_h: ht_dtype = k.dtype)
                        hn[hv] = rb(M) @ rb(h[hv]) + rb(S)
                    elif chain_round:
                        hn[hv] = rb(M) @ rb(h[hv]) + S
                    else:
                        hn[hv] = M @ h[hv] + S
                else:
                    hn[hv] = rb(S) if chain_round == "buf" else S
            h = hn
        last.append(len(segs) - 1)
    return segs, last


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="31,32,33")
    ap.add_argument("--out", default="/tmp/acc_emul/results.json")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    args = ap.parse_args()
    from test_gpu_kernels import make_inputs, oracle  # noqa: E402
    from accuracy import rel, breakdown  # noqa: E402
    res = {"seqs": SEQS, "H": H, "HV": HV, "seeds": {}}
    for seed in [int(x) for x in args.seeds.split(",")]:
        inp = make_inputs(SEQS, H=H, HV=HV, seed=seed, device="cpu")
        t = time.time()
        os.makedirs("/tmp/acc_emul", exist_ok=True)  # the float64 references are cached here
        ref_path = f"/tmp/acc_emul/ref_{seed}.pt"
        if os.path.exists(ref_path):
            o_ref, ht_ref = torch.load(ref_path)
        else:
            o_ref, ht_ref = oracle(inp, False)
            torch.save((o_ref, ht_ref), ref_path)
        print(f"seed {seed}: reference {time.time() - t:.1f}s", flush=True)
        row = {}
        for name in args.variants.split(","):
            t = time.time()
            opts = dict(VARIANTS[name])
            if "cp" in opts:
                cpm = opts.pop("cp")
                segs, last = cp_segments(inp, {"fp32": False, "bf16": True, "buf": "buf"}[cpm])
                opts.update(segments=segs, last_seg=last)
            o, ht = run_variant(inp, opts)
            r = {"o": rel(o, o_ref), "final_state": rel(ht, ht_ref),
                 "breakdown": breakdown(o, ht, o_ref, ht_ref, inp["cu_seqlens"])}
            row[name] = r
            b = r["breakdown"]
            print(f"  {name:18s} o {r['o']:.4e} st {r['final_state']:.4e} | zero-decay o {b['o_zero-decay']:.4e} "
                  f"st {b['state_zero-decay']:.4e} | seq20000 o {b['o_by_seq'][3]:.4e} st {b['state_by_seq'][3]:.4e}"
                  f" ({time.time() - t:.1f}s)", flush=True)
        res["seeds"][seed] = row
        json.dump(res, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
