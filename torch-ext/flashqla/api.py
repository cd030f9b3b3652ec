"""The public Gated DeltaNet functions, with FLA's names and argument conventions.

Each call is validated (:mod:`.validation`), offered to the prebuilt Hopper kernels (:mod:`.dispatch`),
and served by the pure-torch reference (:mod:`.reference`) when the kernels decline it. Deciding whether
the kernels can serve a call, and warning once when a CUDA call falls back, is dispatch's job; on the CPU
the reference is the expected path and nothing is warned.
"""

from __future__ import annotations

import torch

from . import fast_path
from .reference import chunk_gated_delta_rule_ref, recurrent_gated_delta_rule_ref
from .validation import validate_inputs

try:
    from .dispatch import try_chunk_forward, try_recurrent_forward
except ModuleNotFoundError as exc:  # no dispatch.py (yet): every call runs on the reference
    if exc.name != f"{__package__}.dispatch":
        raise
    try_chunk_forward = try_recurrent_forward = None

__all__ = ["chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule"]

_ARGS_DOC = """
    Args:
        q: queries [B, T, H, K], bf16 / fp16 / fp32.
        k: keys [B, T, H, K], same dtype as q.
        v: values [B, T, HV, V], same dtype as q; HV must be a multiple of H, and value head j reads
            key head j // (HV // H) (grouped value attention).
        g: per-token log decay [B, T, HV], floating point (fp32 recommended), <= 0.
        beta: delta-rule step sizes [B, T, HV], floating point, already sigmoid'ed.
        scale: output scale; None means K ** -0.5.
        initial_state: state entering each sequence [N, HV, K, V] (K-major), fp32 (bf16 is accepted
            and upcast); None means zeros.
        output_final_state: also return the state after each sequence's last token.
        use_qk_l2norm_in_kernel: L2-normalise q and k over K (eps 1e-6) before use. Without it the GPU
            kernels expect the delta rule's stable regime, beta ||k||^2 <= 2 (unit keys, as Qwen3-Next's
            layers give them): the chunk inverse's products run on fp16 operands, which overflow to inf for
            keys whose norms make its entries exceed 65504.
        cu_seqlens: packed variable-length sequences: int32/int64 offsets [N + 1] on q's device,
            starting at 0, non-decreasing, ending at T, with B == 1. Zero-length sequences are
            allowed (their final state is their initial state). None means N = B sequences of length T.

    Returns:
        (o, final_state): o [B, T, HV, V] in v's dtype; final_state [N, HV, K, V] fp32, or None when
        output_final_state is False.

    Raises:
        TypeError / ValueError: naming the offending argument, what was expected and what came
            (see :func:`flashqla.validation.validate_inputs`).

    Which inputs the GPU kernels take (sm_90 device, dtypes such as fp32 inputs being served by the
    reference or cast, head dims): see dispatch. Everything else, CPU tensors included, runs on the
    differentiable pure-torch fp32 reference (:mod:`flashqla.reference`).
"""


def chunk_gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm_in_kernel: bool = False,
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    sig = fast_path.signature(q, k, v, g, beta, scale, initial_state, output_final_state, use_qk_l2norm_in_kernel,
                              cu_seqlens)
    if sig is not None:  # a signature the kernels served before: no validation or plan again (host time)
        out = fast_path.run(sig, q, k, v, g, beta, scale, initial_state, cu_seqlens)
        if out is not None:
            return out
    problem = validate_inputs(q, k, v, g, beta, scale, initial_state, cu_seqlens, output_final_state)
    if try_chunk_forward is not None:
        out = try_chunk_forward(problem, q, k, v, g, beta, scale, initial_state, output_final_state,
                                use_qk_l2norm_in_kernel, cu_seqlens)
        if out is not None:
            return out
    return chunk_gated_delta_rule_ref(q, k, v, g, beta, scale, initial_state, output_final_state,
                                      use_qk_l2norm_in_kernel, cu_seqlens)


def fused_recurrent_gated_delta_rule(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    beta: torch.Tensor,
    scale: float | None = None,
    initial_state: torch.Tensor | None = None,
    output_final_state: bool = False,
    use_qk_l2norm_in_kernel: bool = False,
    cu_seqlens: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    problem = validate_inputs(q, k, v, g, beta, scale, initial_state, cu_seqlens, output_final_state)
    if try_recurrent_forward is not None:
        out = try_recurrent_forward(problem, q, k, v, g, beta, scale, initial_state, output_final_state,
                                    use_qk_l2norm_in_kernel, cu_seqlens)
        if out is not None:
            return out
    return recurrent_gated_delta_rule_ref(q, k, v, g, beta, scale, initial_state, output_final_state,
                                          use_qk_l2norm_in_kernel, cu_seqlens)


chunk_gated_delta_rule.__doc__ = (
    """Gated DeltaNet over whole sequences (prefill / training), chunked form.

    Per sequence and value head, with a K x V state S:
        S_t = exp(g_t) (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T;  o_t = scale * S_t^T q_t.
"""
    + _ARGS_DOC
)

fused_recurrent_gated_delta_rule.__doc__ = (
    """Gated DeltaNet token by token (decoding: usually T == 1 with a carried initial_state).

    Same recurrence, arguments and results as :func:`chunk_gated_delta_rule`.
"""
    + _ARGS_DOC
)
