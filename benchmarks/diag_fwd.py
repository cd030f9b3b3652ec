"""Diagnostic: per-chunk error of the fused forward against the float64 oracle on small controlled cases."""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))
import flashqla  # noqa: E402
from flashqla import reference  # noqa: E402


def case(seqlens, h0, gzero, HV=1, H=1, seed=0):
    gen = torch.Generator().manual_seed(seed)
    T = sum(seqlens)
    q = reference.l2norm(torch.randn(1, T, H, 128, generator=gen))
    k = reference.l2norm(torch.randn(1, T, H, 128, generator=gen))
    v = torch.randn(1, T, HV, 128, generator=gen)
    g = torch.zeros(1, T, HV) if gzero else torch.nn.functional.logsigmoid(torch.randn(1, T, HV, generator=gen)) / 4
    beta = torch.sigmoid(torch.randn(1, T, HV, generator=gen))
    cu = torch.tensor([0] + list(torch.tensor(seqlens).cumsum(0)), dtype=torch.int32)
    s0 = 0.1 * torch.randn(len(seqlens), HV, 128, 128, generator=gen) if h0 else None
    c = lambda t, dt=None: None if t is None else t.cuda().to(dt or t.dtype)  # noqa: E731
    inp = dict(q=c(q, torch.bfloat16), k=c(k, torch.bfloat16), v=c(v, torch.bfloat16), g=c(g), beta=c(beta),
               initial_state=c(s0), cu_seqlens=c(cu))
    o, ht = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    ins = {n: (x.double() if x is not None and x.is_floating_point() else x) for n, x in inp.items()}
    o_ref, ht_ref = reference.naive_recurrent_gated_delta_rule_f64(**ins, output_final_state=True)
    errs = []
    for c0 in range(0, T, 64):
        a, b = o[0, c0:c0 + 64].double(), o_ref[0, c0:c0 + 64]
        errs.append(f"{((a - b).norm() / b.norm()).item():.1e}")
    hte = ((ht.double() - ht_ref).norm() / ht_ref.norm()).item()
    print(f"seqs={seqlens} h0={h0} gzero={gzero} HV={HV}: o per chunk {errs}  ht {hte:.1e}", flush=True)


if __name__ == "__main__":
    for bv in ("128", "64"):
        os.environ["FLASHQLA_BLOCK_V"] = bv
        print("block_v", bv)
        for seqs in ([64], [128], [64, 64], [200]):
            for h0 in (False, True):
                for gz in (True, False):
                    case(seqs, h0, gz)
