"""Float64 emulation of flashqla's forward (current algebra) with alternative per-chunk inverses, against the
float64 recurrence: how much would an fp16 inverse (FlashInfer SM90 GDN style) add to the forward's error?

python benchmarks/results/2026-11-26-h100-s28/inverse_f16_emulation/emulate_inverse.py \
    [--cases ragged,1x65536] [--seeds 31,32,33] [--variants ...] [--out .../results.json]

Adapted from results/2026-11-24-h200-s14/beta_on_w_ab/emulation/emulate.py (its "beta_on_vn" path, which is the
current kernel's algebra: push-through form, A~ = bf16(Y (.) Gamma), Y = (I + strict_lower(K K^T diag(beta)))^-1,
Vn' = A~ W, O's operand bf16(diag(beta) Vn'), state update operand bf16(diag(d beta) Vn')). That script inverted
exactly (float64); here the inverse step is switchable:

  exact          Y in float64, then gated and rounded to bf16 once (= the old script's beta_on_vn)
  kernel_f16     today's kkt_solve / fused inverse (chunk_inverse.solve_row_stripe_f16): 16x16 diagonal blocks by
                 fp32 forward substitution (kept fp32), then row stripes right to left,
                 X_IJ = fp32( fp16(-sum_K fp16(X_IK) fp16(L_KJ)) fp16(X_JJ) ), fp32 accumulation; gated from fp32
  fi_f16         FlashInfer SM90 (flat CollectiveInverse<half>): L rounded to fp16, 8x8 diagonal blocks solved in
                 fp32 from the fp16 L and stored fp16, then merges 8->16->32->64, each
                 X21 = fp16( fp16(-X22 L21) X11 ) (fp16 operands, fp32 accumulation; at 32->64 the second product is
                 split in two k-halves whose fp16 results are added in fp16, as the kernel's cross-warp reduction);
                 the fp16 inverse then gated (fp32) and rounded to bf16
  fi_f16_gatedL  as fi_f16 but the gate applied to L before the inverse, L = fp16(strict_lower(K K^T diag(beta))
                 (.) Gamma) (what FlashInfer does), A~ = bf16(fp16 inverse)

A~'s storage dtype (a_dtype) is bf16 unless the variant says fp16. Every other rounding point is the current kernel's.
Inputs: tests/test_gpu_kernels.py make_inputs (CPU generator: the same inputs as the GPU runs of benchmarks/accuracy.py).
Reference: reference.naive_recurrent_gated_delta_rule_f64 (cached under /tmp/acc_emul_inv/).
"""

import argparse
import json
import os
import sys
import time

import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 4))  # the repository
for sub in ("tests", "torch-ext", "benchmarks"):
    sys.path.insert(0, os.path.join(ROOT, sub))
os.environ.setdefault("FLASHQLA_POISON", "0")

torch.set_num_threads(os.cpu_count() or 1)

C = 64
CASES = {"1x65536": ([65536], 2, 8), "ragged": ([1000, 4097, 63, 20000], 2, 4)}

VARIANTS = {
    "exact": {"inv": "exact"},                          # inv_fp32 of the brief
    "kernel_f16": {"inv": "kernel_f16"},                # today's kernel
    "fi_f16": {"inv": "fi", "diag": 8},                 # inv_f16_all
    "fi_f16_diag16": {"inv": "fi", "diag": 16},         # as fi_f16, 16x16 diagonal blocks (no 8->16 merge)
    "fi_f16_gatedL": {"inv": "fi", "diag": 8, "gate_first": True},  # inv_f16_gated_L
    "kernel_f16_Af16": {"inv": "kernel_f16", "a_dtype": torch.float16},  # today's inverse, A~ stored fp16
    "fi_f16_Af16": {"inv": "fi", "diag": 8, "a_dtype": torch.float16},   # fp16 inverse, A~ stored fp16
    "exact_Afp32": {"inv": "exact", "a_dtype": None},   # no rounding of A~ at all: the inverse+A~ floor
}


def rnd(x, dt):
    """round to dt, keep the working dtype (float64)"""
    return x if dt is None else x.to(dt).to(x.dtype)


def r16(x):
    return rnd(x, torch.float16)


def rb(x):
    return rnd(x, torch.bfloat16)


def tri_inv_f32(Lblk):
    """unit lower triangular inverse of I + Lblk ([B,n,n] strictly lower), in fp32 (forward substitution)"""
    n = Lblk.shape[-1]
    eye = torch.eye(n, dtype=torch.float32)
    return torch.linalg.solve_triangular(eye + Lblk.float(), eye.expand(Lblk.shape).contiguous(), upper=False,
                                         unitriangular=True).double()


def inverse_exact(L):
    eye = torch.eye(L.shape[-1], dtype=torch.float64)
    return torch.linalg.solve_triangular(eye + L, eye.expand(L.shape).contiguous(), upper=False, unitriangular=True)


def inverse_kernel_f16(L, sub=16):
    """chunk_inverse.solve_row_stripe_f16: L [B,64,64] strictly lower (fp32 values). Returns fp32-valued X."""
    nb = L.shape[-1] // sub
    X = torch.zeros_like(L)
    blk = lambda i: slice(sub * i, sub * (i + 1))  # noqa: E731
    Xd = [tri_inv_f32(L[:, blk(j), blk(j)]) for j in range(nb)]  # fp32 diagonal inverses (x_s, fp32)
    for j in range(nb):
        X[:, blk(j), blk(j)] = Xd[j]
    for I in range(1, nb):
        xa = {I: r16(Xd[I])}                       # fp16 A fragments of X_IK
        for J in range(I - 1, -1, -1):
            T = torch.zeros_like(L[:, :sub, :sub])
            for K in range(J + 1, I + 1):
                T = T + xa[K] @ r16(L[:, blk(K), blk(J)])   # fp16 x fp16, fp32 accumulate
            XIJ = r16(-T) @ r16(Xd[J])                       # fp32 result (xo)
            X[:, blk(I), blk(J)] = XIJ
            xa[J] = r16(XIJ)
    return X


def inverse_fi_f16(L16, diag=8):
    """FlashInfer flat CollectiveInverse<half>: L16 [B,64,64] strictly lower, fp16 values. Returns fp16-valued X."""
    n = L16.shape[-1]
    X = torch.zeros_like(L16)
    for o in range(0, n, diag):
        X[:, o:o + diag, o:o + diag] = r16(tri_inv_f32(L16[:, o:o + diag, o:o + diag]))
    s = diag
    while s < n:
        for o in range(0, n, 2 * s):
            a, b, c = slice(o, o + s), slice(o + s, o + 2 * s), o + s
            X11, X22, L21 = X[:, a, a], X[:, b, b], L16[:, b, a]
            T = r16(-(X22 @ L21))                               # -inv(D) C, fp32 acc, to fp16
            if s == 32:   # two warps' k-halves, each rounded to fp16, added in fp16 (cross-warp reduction)
                h = 16
                X21 = r16(r16(T[..., :h] @ X11[:, :h]) + r16(T[..., h:] @ X11[:, h:]))
            else:
                X21 = r16(T @ X11)
            X[:, b, a] = X21
        s *= 2
    return X


def chunk_At(kc, bc, G, opts):
    """A~ of one chunk and all its value heads: kc [HV,c,K] (exact bf16 values), bc [HV,c] fp32, G [HV,c] fp32."""
    c = kc.shape[1]
    kk = kc.double() @ kc.double().transpose(-1, -2)           # K K^T: bf16 products, fp32 accumulation ~ exact
    L = (kk * bc.double().unsqueeze(-2)).tril(-1)               # strict_lower(K K^T diag(beta)) (push-through)
    causal = torch.ones(c, c, dtype=torch.bool).tril()
    Gd = G.double()
    Gamma = (Gd.unsqueeze(-1) - Gd.unsqueeze(-2)).masked_fill(~causal, float("-inf")).exp()
    if c < C:   # pad to a full chunk (rows past the end solve to identity rows, as in the kernel)
        Lp = torch.zeros(L.shape[0], C, C, dtype=L.dtype)
        Lp[:, :c, :c] = L
        Gp = torch.zeros(L.shape[0], C, C, dtype=L.dtype)
        Gp[:, :c, :c] = Gamma
        L, Gam = Lp, Gp
    else:
        Gam = Gamma
    inv = opts["inv"]
    a_dt = opts.get("a_dtype", torch.bfloat16)
    if inv == "exact":
        At = inverse_exact(L) * Gam
    elif inv == "kernel_f16":
        At = inverse_kernel_f16(L) * Gam
    elif inv == "fi":
        if opts.get("gate_first"):
            Xg = inverse_fi_f16(r16(L * Gam), opts.get("diag", 8))
            At = Xg * torch.tril(torch.ones(C, C, dtype=L.dtype))
        else:
            At = inverse_fi_f16(r16(L), opts.get("diag", 8)) * Gam
    else:
        raise ValueError(inv)
    return rnd(At, a_dt)[:, :c, :c]


def run_variant(inp, opts, H, HV):
    dt = torch.float64
    q, k, v = inp["q"][0], inp["k"][0], inp["v"][0]
    g, beta, h0, cu = inp["g"][0], inp["beta"][0], inp["initial_state"], inp["cu_seqlens"].tolist()
    kh = torch.arange(HV) // (HV // H)
    q = q[:, kh].to(dt).transpose(0, 1)
    k = k[:, kh].to(dt).transpose(0, 1)
    v = v.to(dt).transpose(0, 1)
    g = g.float().transpose(0, 1)
    beta = beta.float().transpose(0, 1)
    scale = 128 ** -0.5
    o = torch.zeros_like(v)
    states = []
    for n in range(len(cu) - 1):
        s, e = cu[n], cu[n + 1]
        S = h0[n].to(dt).clone()
        for c0 in range(s, e, C):
            c1 = min(c0 + C, e)
            qc, kc, vc = q[:, c0:c1], k[:, c0:c1], v[:, c0:c1]
            bc = beta[:, c0:c1]
            G = g[:, c0:c1].cumsum(-1)                  # fp32 chunk-local cumsum
            At = chunk_At(kc, bc, G, opts)
            c = c1 - c0
            causal = torch.ones(c, c, dtype=torch.bool).tril()
            Gd = G.to(dt)
            Gamma = (Gd.unsqueeze(-1) - Gd.unsqueeze(-2)).masked_fill(~causal, float("-inf")).exp()
            gamma = Gd.exp().unsqueeze(-1)
            d = (Gd[:, -1:] - Gd).exp().unsqueeze(-1)
            gl = Gd[:, -1].exp()[:, None, None]
            bcd = bc.to(dt).unsqueeze(-1)
            Sb = rb(S)
            W = rb(vc - gamma * (kc @ Sb))
            Vn = At @ W                                  # Vn' (fp32 accumulator)
            P = rb((qc @ kc.transpose(-1, -2)) * Gamma * scale)
            oc = (qc @ Sb) * (gamma * scale) + P @ rb(bcd * Vn)
            o[:, c0:c1] = rb(oc)
            U = rb(d * bcd * Vn)
            S = gl * S + kc.transpose(-1, -2) @ U
        states.append(S)
    return o.transpose(0, 1).unsqueeze(0), torch.stack(states)


def inverse_only_errors(inp, H, HV, names, max_chunks=64):
    """Relative Frobenius error of A~ (before its storage rounding, and as stored) against the exact gated inverse,
    over the first max_chunks full chunks of the first long sequence: a direct view of each inverse's error."""
    k, g, beta = inp["k"][0], inp["g"][0], inp["beta"][0]
    kh = torch.arange(HV) // (HV // H)
    k = k[:, kh].double().transpose(0, 1)
    g = g.float().transpose(0, 1)
    beta = beta.float().transpose(0, 1)
    out = {n: {"num2": 0.0, "num2_stored": 0.0} for n in names}
    den2 = 0.0
    for ci in range(max_chunks):
        c0 = ci * C
        kc, bc, G = k[:, c0:c0 + C], beta[:, c0:c0 + C], g[:, c0:c0 + C].cumsum(-1)
        ref = chunk_At(kc, bc, G, {"inv": "exact", "a_dtype": None})
        den2 += float((ref ** 2).sum())
        for n in names:
            raw = chunk_At(kc, bc, G, {**VARIANTS[n], "a_dtype": None})
            st = chunk_At(kc, bc, G, VARIANTS[n])
            out[n]["num2"] += float(((raw - ref) ** 2).sum())
            out[n]["num2_stored"] += float(((st - ref) ** 2).sum())
    return {n: {"A_rel_unrounded": (r["num2"] / den2) ** 0.5, "A_rel_stored": (r["num2_stored"] / den2) ** 0.5}
            for n, r in out.items()}


def oracle_segmented(inp, seg=2048):
    """tests/test_gpu_kernels.oracle (reference.naive_recurrent_gated_delta_rule_f64) run on segments of at most
    `seg` tokens of each sequence, the state carried from one to the next: the same float64 operations in the same
    order, but the reference's per-token output rows (each keeps ~0.7 MB alive on CPU) are freed after each segment,
    so that 1x65536 fits in memory."""
    from flashqla import reference
    ins = {k_: (v_.double() if torch.is_floating_point(v_) else v_) for k_, v_ in inp.items()}
    cu = ins["cu_seqlens"].tolist()
    os_, hs = [], []
    for n in range(len(cu) - 1):
        S = ins["initial_state"][n:n + 1]
        for a in range(cu[n], cu[n + 1], seg):
            b = min(a + seg, cu[n + 1])
            o, S = reference.naive_recurrent_gated_delta_rule_f64(
                *(ins[x][:, a:b] for x in ("q", "k", "v", "g", "beta")), initial_state=S, output_final_state=True)
            os_.append(o.clone())
        hs.append(S[0])
    return torch.cat(os_, 1), torch.stack(hs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="ragged")
    ap.add_argument("--seeds", default="31")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results.json"))
    args = ap.parse_args()
    from test_gpu_kernels import make_inputs, oracle  # noqa: E402
    from accuracy import rel, breakdown  # noqa: E402
    res = json.load(open(args.out)) if os.path.exists(args.out) else {"cases": {}}
    names = args.variants.split(",")
    for case in args.cases.split(","):
        seqs, H, HV = CASES[case]
        cres = res["cases"].setdefault(case, {"seqs": seqs, "H": H, "HV": HV, "seeds": {}})
        for seed in [int(x) for x in args.seeds.split(",")]:
            inp = make_inputs(seqs, H=H, HV=HV, seed=seed, device="cpu")
            t = time.time()
            os.makedirs("/tmp/acc_emul_inv", exist_ok=True)
            ref_path = f"/tmp/acc_emul_inv/ref_{case}_{seed}.pt"
            if os.path.exists(ref_path):
                o_ref, ht_ref = torch.load(ref_path)
            else:
                o_ref, ht_ref = oracle(inp, False) if case == "ragged" else oracle_segmented(inp)
                torch.save((o_ref, ht_ref), ref_path)
            print(f"{case} seed {seed}: reference {time.time() - t:.1f}s", flush=True)
            row = cres["seeds"].setdefault(str(seed), {})
            for name in names:
                t = time.time()
                o, ht = run_variant(inp, VARIANTS[name], H, HV)
                r = {"o": rel(o, o_ref), "final_state": rel(ht, ht_ref),
                     "breakdown": breakdown(o, ht, o_ref, ht_ref, inp["cu_seqlens"])}
                row[name] = r
                b = r["breakdown"]
                print(f"  {name:16s} o {r['o']:.4e} st {r['final_state']:.4e} | zero-decay o {b['o_zero-decay']:.4e}"
                      f" st {b['state_zero-decay']:.4e} | strong o {b['o_strong-decay']:.4e} st "
                      f"{b['state_strong-decay']:.4e} ({time.time() - t:.1f}s)", flush=True)
                json.dump(res, open(args.out, "w"), indent=1)
            if "inverse_only" not in row:
                row["inverse_only"] = inverse_only_errors(inp, H, HV, [n for n in VARIANTS])
                for n, r in row["inverse_only"].items():
                    print(f"  A~ error {n:16s} unrounded {r['A_rel_unrounded']:.3e} stored {r['A_rel_stored']:.3e}",
                          flush=True)
                json.dump(res, open(args.out, "w"), indent=1)
        # means over the seeds present
        mean = {}
        for name in VARIANTS:
            rows = [s[name] for s in cres["seeds"].values() if name in s]
            if rows:
                mean[name] = {m: sum(r[m] for r in rows) / len(rows) for m in ("o", "final_state")}
                mean[name]["n_seeds"] = len(rows)
        cres["mean"] = mean
        json.dump(res, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
