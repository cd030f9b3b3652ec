"""flashqla demo: one Gated DeltaNet chunked prefill on a fixed default input.

    pip install -e . && python examples/demo.py

Runs `flashqla.chunk_gated_delta_rule` on the prebuilt Hopper kernels when an sm_90 GPU (H100/H200)
and the binaries are there, and on the pure-torch reference everywhere else (CPU, other GPUs).
It prints what ran, the shapes, the time, and the error against the float64 token-by-token reference.

The default input is embedded: random tensors from a fixed seed, shaped like one Qwen3.5-9B GDN layer
at tensor-parallel degree 4 (4 key heads, 8 value heads, head dim 128), two packed sequences
(varlen, lengths 200 and 312: neither a multiple of the 64-token chunk), bf16 q/k/v, fp32 gates and
states, an initial state, q/k L2-normalised in the kernel. Options change the sizes; --device picks one.
Exit status 0 when the error is within tolerance, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

import flashqla

TOLERANCE = {torch.bfloat16: 2e-2, torch.float16: 5e-3, torch.float32: 1e-4}  # relative L2 vs float64


def make_inputs(lengths, H, HV, K, V, dtype, device, seed=0):
    """The default input: random, from a fixed seed, generated on the CPU (same values on every device)."""
    g = torch.Generator().manual_seed(seed)
    T, N = sum(lengths), len(lengths)
    q = torch.randn(1, T, H, K, generator=g)
    k = torch.randn(1, T, H, K, generator=g)
    v = torch.randn(1, T, HV, V, generator=g)
    gate = torch.nn.functional.logsigmoid(torch.randn(1, T, HV, generator=g)) / 16  # log decay <= 0
    gate[..., : HV // 4] = 0.0  # a quarter of the heads do not decay (as in real checkpoints)
    beta = torch.sigmoid(torch.randn(1, T, HV, generator=g))
    h0 = 0.1 * torch.randn(N, HV, K, V, generator=g)
    cu_seqlens = torch.tensor([0] + [sum(lengths[: i + 1]) for i in range(N)], dtype=torch.int32)
    cpu = dict(q=q.to(dtype), k=k.to(dtype), v=v.to(dtype), g=gate, beta=beta, initial_state=h0, cu_seqlens=cu_seqlens)
    dev = {name: t.to(device) for name, t in cpu.items()}
    return cpu, dev


def rel_l2(x: torch.Tensor, ref: torch.Tensor) -> float:
    return float((x.detach().double().cpu() - ref).norm() / ref.norm().clamp_min(1e-300))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lengths", type=int, nargs="+", default=[200, 312], help="packed sequence lengths")
    ap.add_argument("--heads", type=int, nargs=2, default=[4, 8], metavar=("H", "HV"), help="key / value heads")
    ap.add_argument("--head-dim", type=int, default=128, help="K = V")
    ap.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
    ap.add_argument("--device", default=None, help="cuda or cpu (default: cuda when there is a GPU)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    H, HV = args.heads
    K = V = args.head_dim

    ok, reason = flashqla.kernels_available()
    on_kernels = ok and device.type == "cuda"
    where = (torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU")
    path = "flashqla GPU kernels (prebuilt sm_90a binaries)" if on_kernels else "pure-torch reference (fp32)"
    print(f"flashqla demo  torch {torch.__version__}  device {device} ({where})")
    print(f"kernels available: {ok} ({reason})")

    cpu_in, dev_in = make_inputs(args.lengths, H, HV, K, V, dtype, device, args.seed)
    T, N = sum(args.lengths), len(args.lengths)
    call = dict(output_final_state=True, use_qk_l2norm_in_kernel=True)

    o, state = flashqla.chunk_gated_delta_rule(**dev_in, **call)  # warm-up (and the result)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    o, state = flashqla.chunk_gated_delta_rule(**dev_in, **call)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    ms = (time.perf_counter() - t0) * 1e3

    t1 = time.perf_counter()
    oracle = {name: (t.double() if t.is_floating_point() else t) for name, t in cpu_in.items()}
    o_ref, s_ref = flashqla.reference.naive_recurrent_gated_delta_rule_f64(**oracle, **call)
    ref_s = time.perf_counter() - t1

    e_o, e_s = rel_l2(o, o_ref), rel_l2(state, s_ref)
    tol = TOLERANCE[dtype]
    passed = e_o <= tol and e_s <= tol
    print(f"ran on: {path}")
    print(f"input:  q, k [1, {T}, {H}, {K}]  v [1, {T}, {HV}, {V}]  {args.dtype}; g, beta [1, {T}, {HV}] fp32;"
          f" {N} packed sequences {args.lengths}; initial state [{N}, {HV}, {K}, {V}] fp32")
    print(f"output: o {list(o.shape)} {str(o.dtype).replace('torch.', '')}; "
          f"final state {list(state.shape)} {str(state.dtype).replace('torch.', '')}")
    print(f"time:   {ms:.3f} ms for one call (float64 reference: {ref_s:.2f} s)")
    print(f"error vs float64 reference (relative L2): o {e_o:.2e}, final state {e_s:.2e}  (tolerance {tol:.0e})")
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
