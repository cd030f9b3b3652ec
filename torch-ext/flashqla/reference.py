"""Pure-torch references for the Gated DeltaNet operator (DESIGN.md section 1).

Per sequence and value head, with a K x V state S:

    S_t = exp(g_t) (I - beta_t k_t k_t^T) S_{t-1} + beta_t k_t v_t^T
    o_t = scale * S_t^T q_t            (the updated state: token t sees itself)

Three forms, all taking FLA's arguments (q, k [B, T, H, K]; v [B, T, HV, V]; g, beta [B, T, HV];
initial_state [N, HV, K, V]; cu_seqlens [N + 1] with B == 1):

- :func:`chunk_gated_delta_rule_ref`: fp32 chunked form, the CPU / non-Hopper fallback of
  ``chunk_gated_delta_rule``;
- :func:`recurrent_gated_delta_rule_ref`: fp32 token recurrence, the fallback of
  ``fused_recurrent_gated_delta_rule`` (decoding);
- :func:`naive_recurrent_gated_delta_rule_f64`: float64 token recurrence, the test oracle.

All are differentiable through autograd. Grouped value attention (HV = R * H) is handled by viewing
the value heads as [H, R] and broadcasting q and k over R, so q and k are never repeated.
"""

from __future__ import annotations

import torch

from .validation import cu_seqlens_host

__all__ = [
    "chunk_gated_delta_rule_ref",
    "recurrent_gated_delta_rule_ref",
    "naive_recurrent_gated_delta_rule_f64",
    "l2norm",
]


def l2norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """FLA's L2 normalisation over the last dim: ``x * rsqrt(sum(x^2) + eps)``."""
    return x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + eps)


def _prepare(q, k, v, g, beta, scale, initial_state, use_qk_l2norm_in_kernel, cu_seqlens, dtype):
    """Cast to ``dtype`` and lay the inputs out head-major with value heads split as [H, R].

    Returns q, k as [B, H, 1, T, K]; v as [B, H, R, T, V]; g, beta as [B, H, R, T]; the scale;
    and the initial state as [N, H, R, K, V] (zeros when not given).
    """
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    R = HV // H
    q, k = q.to(dtype), k.to(dtype)
    if use_qk_l2norm_in_kernel:
        q, k = l2norm(q), l2norm(k)
    q = q.permute(0, 2, 1, 3).unsqueeze(2)
    k = k.permute(0, 2, 1, 3).unsqueeze(2)
    v = v.to(dtype).permute(0, 2, 1, 3).reshape(B, H, R, T, V)
    g = g.to(dtype).permute(0, 2, 1).reshape(B, H, R, T)
    beta = beta.to(dtype).permute(0, 2, 1).reshape(B, H, R, T)
    scale = K**-0.5 if scale is None else float(scale)
    N = B if cu_seqlens is None else cu_seqlens.numel() - 1
    if initial_state is None:
        h0 = q.new_zeros(N, H, R, K, V)
    else:
        h0 = initial_state.to(dtype).reshape(N, H, R, K, V)
    return q, k, v, g, beta, scale, h0


def _finish(o_seqs, states, B, T, HV, V, out_dtype, state_dtype, output_final_state):
    """Concatenate per-sequence outputs [1, H, R, L, V] into o [B, T, HV, V] and stack the states."""
    o = torch.cat(o_seqs, dim=3).reshape(B, HV, T, V).permute(0, 2, 1, 3).contiguous().to(out_dtype)
    final = None
    if output_final_state:
        final = torch.cat(states, dim=0)
        final = final.reshape(final.shape[0], HV, *final.shape[3:]).to(state_dtype)
    return o, final


def _chunk_sequence(q, k, v, g, beta, scale, S, chunk_size):
    """Run one sequence (or a batch of equal-length rows) through the chunked form.

    q, k [b, H, 1, n, K]; v [b, H, R, n, V]; g, beta [b, H, R, n]; S [b, H, R, K, V].
    Returns o [b, H, R, n, V] and the final state. Every exponent is of a non-positive number.
    """
    n_tok = q.shape[3]
    causal_full = torch.ones(chunk_size, chunk_size, dtype=torch.bool, device=q.device).tril()
    eye_full = torch.eye(chunk_size, dtype=q.dtype, device=q.device)
    outs = []
    for c0 in range(0, n_tok, chunk_size):
        c1 = min(c0 + chunk_size, n_tok)
        C = c1 - c0
        qc, kc, vc = q[..., c0:c1, :], k[..., c0:c1, :], v[..., c0:c1, :]
        bc = beta[..., c0:c1]
        G = g[..., c0:c1].cumsum(-1)                                   # [b, H, R, C]
        causal, eye = causal_full[:C, :C], eye_full[:C, :C]
        Gamma = (G.unsqueeze(-1) - G.unsqueeze(-2)).masked_fill(~causal, float("-inf")).exp()
        kkt = kc @ kc.transpose(-1, -2)                                 # [b, H, 1, C, C]
        L_strict = (bc.unsqueeze(-1) * kkt).tril(-1)                    # diag(beta) K K^T, strict lower
        A_free = torch.linalg.solve_triangular(eye + L_strict, eye.expand_as(L_strict), upper=False,
                                               unitriangular=True)
        A = A_free * Gamma                                              # gated inverse
        gamma = G.exp().unsqueeze(-1)                                   # [b, H, R, C, 1]
        Vn = A @ (bc.unsqueeze(-1) * (vc - gamma * (kc @ S)))           # per-token deltas
        qkt = (qc @ kc.transpose(-1, -2)) * Gamma
        outs.append(scale * (gamma * (qc @ S) + qkt @ Vn))
        decay_to_end = (G[..., -1:] - G).exp().unsqueeze(-1)            # exp(G_C - G_r)
        S = G[..., -1:].exp().unsqueeze(-1) * S + kc.transpose(-1, -2) @ (decay_to_end * Vn)
    o = torch.cat(outs, dim=3) if outs else v.new_zeros(v.shape)
    return o, S


def _recurrent_sequence(q, k, v, g, beta, scale, S):
    """Token-by-token recurrence over one sequence; shapes as in :func:`_chunk_sequence`."""
    outs = []
    for t in range(q.shape[3]):
        q_t, k_t = q[..., t, :], k[..., t, :]                           # [b, H, 1, K]
        S = g[..., t].exp()[..., None, None] * S
        u = beta[..., t, None] * (v[..., t, :] - (k_t.unsqueeze(-2) @ S).squeeze(-2))
        S = S + k_t.unsqueeze(-1) * u.unsqueeze(-2)
        outs.append(scale * (q_t.unsqueeze(-2) @ S).squeeze(-2))
    o = torch.stack(outs, dim=3) if outs else v.new_zeros(v.shape)
    return o, S


def _run(step, q, k, v, g, beta, scale, initial_state, output_final_state, use_qk_l2norm_in_kernel,
         cu_seqlens, dtype, out_dtype, state_dtype):
    B, T = q.shape[:2]
    HV, V = v.shape[2], v.shape[3]
    qh, kh, vh, gh, bh, scale, h0 = _prepare(
        q, k, v, g, beta, scale, initial_state, use_qk_l2norm_in_kernel, cu_seqlens, dtype)
    o_seqs, states = [], []
    if cu_seqlens is None:
        o, S = step(qh, kh, vh, gh, bh, scale, h0)
        o_seqs.append(o)
        states.append(S)
    else:
        offsets = cu_seqlens_host(cu_seqlens)
        for n, (s, e) in enumerate(zip(offsets[:-1], offsets[1:])):
            o, S = step(qh[..., s:e, :], kh[..., s:e, :], vh[..., s:e, :], gh[..., s:e], bh[..., s:e],
                        scale, h0[n:n + 1])
            o_seqs.append(o)
            states.append(S)
    return _finish(o_seqs, states, B, T, HV, V, out_dtype, state_dtype, output_final_state)


def chunk_gated_delta_rule_ref(
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
    chunk_size: int = 64,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Chunked Gated DeltaNet in fp32 (DESIGN.md section 1), differentiable through autograd.

    Args:
        q, k: [B, T, H, K]; v: [B, T, HV, V] with HV % H == 0 (value head j uses key head j // (HV // H)).
        g: [B, T, HV] per-token log decay (<= 0); beta: [B, T, HV] (already sigmoid'ed).
        scale: defaults to K ** -0.5.
        initial_state: [N, HV, K, V] (fp32; other float dtypes are upcast); zeros when None.
        output_final_state: return the state after the last token of each sequence.
        use_qk_l2norm_in_kernel: L2-normalise q and k over K (eps 1e-6) first.
        cu_seqlens: [N + 1] packed sequence offsets (B == 1); zero-length sequences keep their initial state.
        chunk_size: tokens per chunk (64, as in the kernels).

    Returns:
        o [B, T, HV, V] in v's dtype, and the final state [N, HV, K, V] fp32 (None unless requested).
    """
    def step(qs, ks, vs, gs, bs, sc, S):
        return _chunk_sequence(qs, ks, vs, gs, bs, sc, S, chunk_size)

    return _run(step, q, k, v, g, beta, scale, initial_state, output_final_state,
                use_qk_l2norm_in_kernel, cu_seqlens, torch.float32, v.dtype, torch.float32)


def recurrent_gated_delta_rule_ref(
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
    """Token-by-token Gated DeltaNet in fp32, differentiable; arguments and returns as
    :func:`chunk_gated_delta_rule_ref` (o in v's dtype, final state fp32). Used for decoding."""
    return _run(_recurrent_sequence, q, k, v, g, beta, scale, initial_state, output_final_state,
                use_qk_l2norm_in_kernel, cu_seqlens, torch.float32, v.dtype, torch.float32)


def naive_recurrent_gated_delta_rule_f64(
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
    """The test oracle: the recurrence of DESIGN.md section 1 written literally, in float64.

    Deliberately shares no code with the fp32 forms: key heads are gathered per value head by index,
    and each token applies S = exp(g) (S - beta k (k^T S)) + beta k v^T, o = scale S^T q.
    Arguments as :func:`chunk_gated_delta_rule_ref`; returns o [B, T, HV, V] and the final state
    [N, HV, K, V], both float64 (the state None unless requested).
    """
    B, T, H, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    q, k, v, g, beta = (x.double() for x in (q, k, v, g, beta))
    if use_qk_l2norm_in_kernel:
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    key_head = torch.arange(HV, device=q.device) // (HV // H)
    q, k = q[:, :, key_head], k[:, :, key_head]                        # [B, T, HV, K]
    scale = K**-0.5 if scale is None else float(scale)
    if cu_seqlens is None:
        seqs = [(b, 0, T) for b in range(B)]
    else:
        offsets = cu_seqlens_host(cu_seqlens)
        seqs = [(0, offsets[n], offsets[n + 1]) for n in range(len(offsets) - 1)]
    rows: list[list[torch.Tensor]] = [[] for _ in range(B)]
    states = []
    for n, (b, start, end) in enumerate(seqs):
        S = q.new_zeros(HV, K, V) if initial_state is None else initial_state[n].double()
        for t in range(start, end):
            kt, bt = k[b, t], beta[b, t, :, None, None]
            kS = torch.einsum("hk,hkv->hv", kt, S)
            S = g[b, t].exp()[:, None, None] * (S - bt * kt[:, :, None] * kS[:, None, :]) \
                + bt * kt[:, :, None] * v[b, t, :, None, :]
            rows[b].append(scale * torch.einsum("hk,hkv->hv", q[b, t], S))
        states.append(S)
    o = torch.stack([torch.stack(r) if r else v.new_zeros(0, HV, V) for r in rows])
    return o, (torch.stack(states) if output_final_state else None)
