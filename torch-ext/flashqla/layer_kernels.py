"""The GDN layers' own kernels around the op: causal conv into q / k / v, and the gated RMSNorm.

transformers' torch path spends most of a GDN layer's prefill outside the op: transposes for the depthwise
conv, the conv itself, and an fp32 RMSNorm in many passes. On the Hopper kernels' terms (CUDA on sm_90,
bf16 / fp16 weights and activations, width-4 SiLU conv, head dim 128, no autograd) these two helpers do
that work in one pass each; otherwise they return None and the layer keeps its torch code, which is the
reference they are tested against.

Under torch.compile both trace into the graph (the eligibility checks that depend only on the machine and
the binaries are compile constants, see :func:`flashqla.dispatch.kernel_plan`; the kernels are custom ops).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .dispatch import has_binary, packed_seqlens, runs_kernels_on

_DTYPES = {torch.bfloat16: "bfloat16", torch.float16: "float16"}
_NORM_CLASSES = ("Qwen3_5RMSNormGated", "Qwen3_5MoeRMSNormGated", "Qwen3NextRMSNormGated")


def _eligible(x: torch.Tensor, *params: torch.Tensor) -> bool:
    if not x.is_cuda or x.dtype not in _DTYPES or not runs_kernels_on(x.device):
        return False
    if any(p is not None and p.dtype != x.dtype for p in params):
        return False
    return not (torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, *params)))


def conv_qkv(module, mixed_qkv: torch.Tensor, cu_seqlens, cache_params):
    """Causal conv + activation of mixed_qkv [B, T, 2*key_dim + value_dim] straight into contiguous
    q, k [B, T, key_dim] and v [B, T, value_dim], or None when the kernel cannot serve this call.

    With a cache (prefill or multi-token continuation) the cache's conv state is updated through its own
    API with the last inputs, and its previous content is the left context of the conv.
    """
    weight, bias = module.conv1d.weight, module.conv1d.bias
    W = weight.shape[-1]
    if W != 4 or module.activation not in ("silu", "swish") or not _eligible(mixed_qkv, weight, bias):
        return None
    if not has_binary("conv_qkv", (("dtype", _DTYPES[mixed_qkv.dtype]), ("width", W))):
        return None
    B, T, C = mixed_qkv.shape
    left = None
    if cache_params is not None:
        n_tail = min(T, W)
        full = cache_params.update_conv_state(mixed_qkv[:, T - n_tail:, :].transpose(1, 2), module.layer_idx,
                                              conv_kernel_size=module.conv_kernel_size)
        ctx = full[..., : full.shape[-1] - n_tail]
        if ctx.shape[-1] > 0:  # the inputs before this call: the last W - 1 of them, zero-padded on the left
            ctx = ctx[..., -(W - 1):]
            left = F.pad(ctx, (W - 1 - ctx.shape[-1], 0)).to(mixed_qkv.dtype).contiguous()
    cu, off = packed_seqlens(cu_seqlens, B if cu_seqlens is None else 1, T, mixed_qkv.device)
    from .ops import conv_qkv as conv_op

    q, k, v = conv_op(mixed_qkv.reshape(B * T, C).contiguous(), weight.reshape(C, W).contiguous(),
                      bias, left, cu, off, int(module.key_dim))
    return q.view(B, T, -1), k.view(B, T, -1), v.view(B, T, -1)


def gated_rmsnorm(norm, x: torch.Tensor, z: torch.Tensor):
    """``norm(x, z)`` for transformers' Qwen3.5 / Qwen3-Next RMSNormGated in one kernel, or None.

    Decided by the norm's class (its math), not by which forward the instance currently has: kernels binds
    a forward onto every decorated module (its own, a hub kernel's or, as a fallback, the class's), and
    they all compute this function. (Telling them apart by function identity is not possible under
    Dynamo: torch 2.11 and 2.13 evaluate ``module.forward.__func__ is type(module).forward`` differently
    from eager.)"""
    if type(norm).__name__ not in _NORM_CLASSES or getattr(norm, "activation", "silu") not in ("silu", "swish"):
        return None
    D = x.shape[-1]
    if D != 128 or z.shape != x.shape or z.dtype != x.dtype or not _eligible(x, norm.weight):
        return None
    if not has_binary("gated_rmsnorm", (("dtype", _DTYPES[x.dtype]), ("dim", D))):
        return None
    from .ops import gated_rmsnorm as norm_op

    return norm_op(x.contiguous(), z.contiguous(), norm.weight.contiguous(), float(norm.variance_epsilon))
