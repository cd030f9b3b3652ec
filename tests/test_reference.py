"""The fp32 references (chunked and recurrent) against the float64 oracle, on fresh random inputs."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from flashqla.reference import (
    chunk_gated_delta_rule_ref,
    naive_recurrent_gated_delta_rule_f64,
    recurrent_gated_delta_rule_ref,
)

K_DIM, V_DIM = 16, 8


def make_inputs(B, T, H, ratio, *, seed, dtype=torch.float32, l2norm=True, h0=True, N=None,
                K=K_DIM, V=V_DIM):
    """Random GDN inputs with every kind of decay head: 25% zero-decay heads (g = 0), strong-decay
    heads (g uniform in [-20, 0] per token) and mild ones (logsigmoid of a normal / 4).

    Without l2norm, k is normalised here to a random norm in (0.5, 1] so the recurrence stays bounded.
    """
    gen = torch.Generator().manual_seed(seed)
    HV = H * ratio
    N = B if N is None else N
    q = torch.randn(B, T, H, K, generator=gen)
    k = torch.randn(B, T, H, K, generator=gen)
    if not l2norm:
        k = k / k.norm(dim=-1, keepdim=True) * (0.5 + 0.5 * torch.rand(B, T, H, 1, generator=gen))
    v = torch.randn(B, T, HV, V, generator=gen)
    g = F.logsigmoid(torch.randn(B, T, HV, generator=gen)) / 4
    heads = torch.randperm(HV, generator=gen)
    n_zero = max(1, HV // 4)
    strong = heads[n_zero:n_zero + max(1, HV // 4)]
    g[..., strong] = -20 * torch.rand(B, T, len(strong), generator=gen)
    g[..., heads[:n_zero]] = 0.0
    beta = torch.sigmoid(torch.randn(B, T, HV, generator=gen))
    state = torch.randn(N, HV, K, V, generator=gen) if h0 else None
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    return dict(q=q, k=k, v=v, g=g, beta=beta, initial_state=state)


def rel_l2(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def check_against_oracle(inputs, tol, **kw):
    o_ref, s_ref = naive_recurrent_gated_delta_rule_f64(**inputs, output_final_state=True, **kw)
    assert o_ref.abs().max() > 0 and s_ref.abs().max() > 0
    for fn in (chunk_gated_delta_rule_ref, recurrent_gated_delta_rule_ref):
        o, s = fn(**inputs, output_final_state=True, **kw)
        assert o.dtype == inputs["v"].dtype and o.shape == inputs["v"].shape
        assert s.dtype == torch.float32 and s.shape == s_ref.shape
        assert torch.isfinite(o).all() and torch.isfinite(s).all()
        assert rel_l2(o, o_ref) < tol, (fn.__name__, "o", rel_l2(o, o_ref))
        assert rel_l2(s, s_ref) < tol, (fn.__name__, "state", rel_l2(s, s_ref))


@pytest.mark.parametrize("T", [1, 63, 64, 65, 200])
@pytest.mark.parametrize("ratio", [1, 2, 3, 4])
@pytest.mark.parametrize("l2norm,h0", [(True, True), (False, False), (True, False), (False, True)])
def test_fp32_matches_oracle(T, ratio, l2norm, h0):
    inputs = make_inputs(2, T, 2, ratio, seed=T * 100 + ratio, l2norm=l2norm, h0=h0)
    check_against_oracle(inputs, 1e-5, use_qk_l2norm_in_kernel=l2norm)


def test_custom_scale_and_chunk_size():
    inputs = make_inputs(1, 100, 2, 2, seed=7)
    o_ref, s_ref = naive_recurrent_gated_delta_rule_f64(**inputs, scale=0.3, output_final_state=True,
                                                        use_qk_l2norm_in_kernel=True)
    for chunk_size in (16, 64):
        o, s = chunk_gated_delta_rule_ref(**inputs, scale=0.3, output_final_state=True,
                                          use_qk_l2norm_in_kernel=True, chunk_size=chunk_size)
        assert rel_l2(o, o_ref) < 1e-5 and rel_l2(s, s_ref) < 1e-5


@pytest.mark.parametrize("ratio", [1, 3])
def test_varlen_with_zero_length_sequences(ratio):
    lens = [0, 37, 0, 113, 64, 1, 0]
    cu = torch.tensor([0] + torch.tensor(lens).cumsum(0).tolist(), dtype=torch.int32)
    T = int(cu[-1])
    inputs = make_inputs(1, T, 2, ratio, seed=11 + ratio, N=len(lens))
    check_against_oracle(inputs, 1e-5, use_qk_l2norm_in_kernel=True, cu_seqlens=cu)

    o, s = chunk_gated_delta_rule_ref(**inputs, output_final_state=True, use_qk_l2norm_in_kernel=True,
                                      cu_seqlens=cu.long())
    h0 = inputs["initial_state"]
    for n, L in enumerate(lens):
        a, b = int(cu[n]), int(cu[n + 1])
        if L == 0:
            assert torch.equal(s[n], h0[n])
            continue
        one = {name: x[:, a:b] for name, x in inputs.items() if name != "initial_state"}
        o_n, s_n = chunk_gated_delta_rule_ref(**one, initial_state=h0[n:n + 1], output_final_state=True,
                                              use_qk_l2norm_in_kernel=True)
        torch.testing.assert_close(o[:, a:b], o_n)
        torch.testing.assert_close(s[n:n + 1], s_n)


def test_no_state_returned_unless_asked():
    inputs = make_inputs(1, 10, 1, 2, seed=3)
    for fn in (chunk_gated_delta_rule_ref, recurrent_gated_delta_rule_ref, naive_recurrent_gated_delta_rule_f64):
        assert fn(**inputs)[1] is None


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_inputs(dtype):
    inputs = make_inputs(2, 130, 2, 2, seed=5, dtype=dtype)
    inputs["initial_state"] = inputs["initial_state"].to(torch.bfloat16)  # bf16 state is upcast
    check_against_oracle(inputs, 1e-2, use_qk_l2norm_in_kernel=True)


def test_extreme_decay_stays_finite():
    """g = -100 per token sums to -6400 over a chunk: any exp(-G) would overflow."""
    inputs = make_inputs(1, 130, 2, 2, seed=9)
    inputs["g"] = torch.full_like(inputs["g"], -100.0)
    inputs["g"][..., 0] = 0.0
    leaves = {name: x.clone().requires_grad_() for name, x in inputs.items()}
    o, s = chunk_gated_delta_rule_ref(**leaves, output_final_state=True, use_qk_l2norm_in_kernel=True)
    o_ref, s_ref = naive_recurrent_gated_delta_rule_f64(**inputs, output_final_state=True,
                                                        use_qk_l2norm_in_kernel=True)
    assert rel_l2(o, o_ref) < 1e-5 and rel_l2(s, s_ref) < 1e-5
    (o.square().sum() + s.square().sum()).backward()
    for name, x in leaves.items():
        assert torch.isfinite(x.grad).all(), name


@pytest.mark.parametrize("varlen", [False, True])
def test_gradients_match_float64_oracle(varlen):
    """Autograd through the fp32 chunked and recurrent forms against autograd through the float64 oracle,
    for every input (decay and initial state included)."""
    if varlen:
        cu = torch.tensor([0, 0, 70, 95], dtype=torch.int64)
        inputs = make_inputs(1, 95, 2, 2, seed=21, N=3)
        extra = dict(cu_seqlens=cu)
    else:
        inputs = make_inputs(2, 70, 2, 2, seed=22)
        extra = {}
    gen = torch.Generator().manual_seed(23)
    w_o = torch.randn(inputs["v"].shape, generator=gen, dtype=torch.float64)
    w_s = torch.randn(inputs["initial_state"].shape, generator=gen, dtype=torch.float64)

    def grads(fn, cast):
        leaves = {name: cast(x).requires_grad_() for name, x in inputs.items()}
        o, s = fn(**leaves, output_final_state=True, use_qk_l2norm_in_kernel=True, **extra)
        ((o.double() * w_o).sum() + (s.double() * w_s).sum()).backward()
        return {name: x.grad for name, x in leaves.items()}

    expected = grads(naive_recurrent_gated_delta_rule_f64, lambda x: x.double())
    for fn in (chunk_gated_delta_rule_ref, recurrent_gated_delta_rule_ref):
        got = grads(fn, lambda x: x.clone())
        for name in inputs:
            assert got[name].abs().max() > 0, (fn.__name__, name)
            assert rel_l2(got[name], expected[name]) < 1e-4, (fn.__name__, name, rel_l2(got[name], expected[name]))


def test_gradcheck_chunk_form_tiny():
    """torch.autograd.gradcheck of the chunked form's fp32 graph, through a float64 wrapper, on a tiny case."""
    inputs = make_inputs(1, 5, 1, 2, seed=31, K=4, V=3)
    inputs = {name: x.double().requires_grad_() for name, x in inputs.items()}

    def f(q, k, v, g, beta, initial_state):
        o, s = chunk_gated_delta_rule_ref(q, k, v, g, beta, initial_state=initial_state, output_final_state=True,
                                          use_qk_l2norm_in_kernel=True, chunk_size=2)
        return o, s

    # the forward computes in fp32, so use fp32-sized steps and tolerances
    assert torch.autograd.gradcheck(f, tuple(inputs.values()), eps=1e-3, atol=5e-3, rtol=5e-3)
