"""Hashes of the forward's outputs on fixed inputs, to compare two builds bit for bit (device_ab's old / new).

python benchmarks/bitwise_ab.py --out hashes.json   (run once per build; equal files = identical outputs)
Cases: ragged varlen with an empty sequence at GVA 1-4, with and without the in-kernel L2 norm, an initial state,
and fixed-length B = 2.
"""
import argparse
import hashlib
import json

import torch
import torch.nn.functional as F

import flashqla


def inputs(seqlens, H, HV, seed, l2norm):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    T, N = sum(seqlens), len(seqlens)
    q = torch.randn(1, T, H, 128, device="cuda", generator=gen).bfloat16()
    k = torch.randn(1, T, H, 128, device="cuda", generator=gen).bfloat16()
    if not l2norm:
        q, k = F.normalize(q.float(), dim=-1).bfloat16(), F.normalize(k.float(), dim=-1).bfloat16()
    v = torch.randn(1, T, HV, 128, device="cuda", generator=gen).bfloat16()
    g = F.logsigmoid(torch.randn(1, T, HV, device="cuda", generator=gen)) / 4
    g[..., : HV // 4] = 0.0
    beta = torch.sigmoid(torch.randn(1, T, HV, device="cuda", generator=gen))
    h0 = torch.randn(N, HV, 128, 128, device="cuda", generator=gen) * 0.1
    cu = torch.tensor([0] + torch.tensor(seqlens).cumsum(0).tolist(), dtype=torch.int32, device="cuda")
    return dict(q=q, k=k, v=v, g=g, beta=beta, initial_state=h0, cu_seqlens=cu)


def digest(t):
    return hashlib.sha256(t.contiguous().view(torch.uint8).cpu().numpy().tobytes()).hexdigest()[:16]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out = {}
    for ratio in (1, 2, 3, 4):
        for l2norm in (False, True):
            inp = inputs([1000, 0, 4097, 63, 2000], 2, 2 * ratio, 7 * ratio + l2norm, l2norm)
            o, ht = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True, use_qk_l2norm_in_kernel=l2norm)
            out[f"ragged_gva{ratio}_l2norm{int(l2norm)}"] = [digest(o), digest(ht)]
    inp = inputs([2048, 2048], 4, 16, 99, False)
    fixed = {k: v for k, v in inp.items() if k != "cu_seqlens"}
    fixed.update(q=inp["q"].view(2, 2048, 4, 128), k=inp["k"].view(2, 2048, 4, 128), v=inp["v"].view(2, 2048, 16, 128),
                 g=inp["g"].view(2, 2048, 16), beta=inp["beta"].view(2, 2048, 16))
    o, ht = flashqla.chunk_gated_delta_rule(**fixed, output_final_state=True)
    out["fixed_b2"] = [digest(o), digest(ht)]
    json.dump(out, open(args.out, "w"), indent=1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
