"""validate_inputs: one test per error class; every message names the argument, the expectation and what came."""

from __future__ import annotations

import pytest
import torch

from flashqla.validation import Problem, cu_seqlens_host, validate_inputs

B, T, H, HV, K, V = 2, 100, 4, 8, 32, 16


def args(**over):
    """A valid call's arguments (random, never zeros), with some replaced."""
    gen = torch.Generator().manual_seed(0)
    a = dict(
        q=torch.randn(B, T, H, K, generator=gen, dtype=torch.float32).bfloat16(),
        k=torch.randn(B, T, H, K, generator=gen).bfloat16(),
        v=torch.randn(B, T, HV, V, generator=gen).bfloat16(),
        g=-torch.rand(B, T, HV, generator=gen),
        beta=torch.rand(B, T, HV, generator=gen),
        scale=None,
        initial_state=torch.randn(B, HV, K, V, generator=gen),
        cu_seqlens=None,
        output_final_state=True,
    )
    a.update(over)
    return a


def varlen_args(cu, **over):
    T_total = 60
    gen = torch.Generator().manual_seed(1)
    a = args(
        q=torch.randn(1, T_total, H, K, generator=gen),
        k=torch.randn(1, T_total, H, K, generator=gen),
        v=torch.randn(1, T_total, HV, V, generator=gen),
        g=-torch.rand(1, T_total, HV, generator=gen),
        beta=torch.rand(1, T_total, HV, generator=gen),
        initial_state=None,
        cu_seqlens=cu,
    )
    a.update(over)
    return a


def test_valid_call_returns_problem():
    assert validate_inputs(**args()) == Problem(B=B, T=T, H=H, HV=HV, K=K, V=V, N=B, is_varlen=False)
    cu = torch.tensor([0, 10, 10, 60], dtype=torch.int32)
    assert validate_inputs(**varlen_args(cu, initial_state=torch.randn(3, HV, K, V))) == Problem(
        B=1, T=60, H=H, HV=HV, K=K, V=V, N=3, is_varlen=True)


def test_not_a_tensor():
    with pytest.raises(TypeError, match=r"^beta: expected a torch.Tensor, got float"):
        validate_inputs(**args(beta=0.5))


@pytest.mark.parametrize("name,shape,layout", [("q", (B, T, H * K), r"4-D tensor \[B, T, H, K\], got 3-D"),
                                               ("v", (B, T, HV, V, 1), r"4-D tensor \[B, T, HV, V\], got 5-D")])
def test_wrong_rank(name, shape, layout):
    with pytest.raises(ValueError, match=rf"^{name}: expected a {layout}"):
        validate_inputs(**args(**{name: torch.randn(shape).bfloat16()}))


def test_k_shape_mismatch_message():
    bad = torch.randn(B, T, H, 64).bfloat16()
    msg = r"^k: expected shape \[B, T, H, K\] = \[2, 100, 4, 32\] matching q, got \[2, 100, 4, 64\]$"
    with pytest.raises(ValueError, match=msg):
        validate_inputs(**args(k=bad))


@pytest.mark.parametrize("shape,what", [((B + 1, T, HV, V), "B"), ((B, T - 1, HV, V), "T")])
def test_v_batch_or_time_mismatch(shape, what):
    with pytest.raises(ValueError, match=r"^v: expected shape \[B, T, HV, V\] with \[B, T\] = \[2, 100\]"):
        validate_inputs(**args(v=torch.randn(shape).bfloat16()))


def test_heads_not_multiple():
    with pytest.raises(ValueError, match=r"^v: expected .* multiple of the key heads H = 4 .* got HV = 6"):
        validate_inputs(**args(v=torch.randn(B, T, 6, V).bfloat16()))


@pytest.mark.parametrize("name", ["g", "beta"])
def test_gate_shape(name):
    with pytest.raises(ValueError, match=rf"^{name}: expected shape \[B, T, HV\] = \[2, 100, 8\] .* got \[2, 100, 4\]"):
        validate_inputs(**args(**{name: torch.rand(B, T, H)}))


@pytest.mark.parametrize("shape", [(B, HV, V, K), (B + 1, HV, K, V), (B, HV, K)])
def test_state_shape(shape):
    with pytest.raises(ValueError, match=r"^initial_state: expected shape \[N, HV, K, V\] = \[2, 8, 32, 16\]"):
        validate_inputs(**args(initial_state=torch.randn(shape)))


def test_state_shape_uses_number_of_sequences_when_varlen():
    cu = torch.tensor([0, 20, 60])
    with pytest.raises(ValueError, match=r"^initial_state: expected shape \[N, HV, K, V\] = \[2, 8, 32, 16\] .* got \[1, "):
        validate_inputs(**varlen_args(cu, initial_state=torch.randn(1, HV, K, V)))


def test_qkv_dtype_mix():
    with pytest.raises(TypeError, match=r"^v: expected dtype torch.bfloat16 matching q, got torch.float16"):
        validate_inputs(**args(v=torch.randn(B, T, HV, V).half()))


@pytest.mark.parametrize("name", ["q", "g", "beta", "initial_state"])
def test_integer_dtype(name):
    a = args()
    a[name] = a[name].to(torch.int32) if name != "q" else torch.ones(B, T, H, K, dtype=torch.int32)
    if name == "q":
        a["k"] = a["k"].to(torch.int32)
        a["v"] = a["v"].to(torch.int32)
    with pytest.raises(TypeError, match=rf"^{name}: expected a floating-point dtype, got torch.int32"):
        validate_inputs(**a)


def test_scale_type_and_value():
    with pytest.raises(TypeError, match=r"^scale: expected None or a real number, got Tensor"):
        validate_inputs(**args(scale=torch.tensor(0.1)))
    with pytest.raises(ValueError, match=r"^scale: expected a finite number, got nan"):
        validate_inputs(**args(scale=float("nan")))


def test_output_final_state_type():
    with pytest.raises(TypeError, match=r"^output_final_state: expected a bool, got str"):
        validate_inputs(**args(output_final_state="yes"))


def test_device_mix():
    meta_g = torch.empty(B, T, HV, device="meta")
    with pytest.raises(ValueError, match=r"^g: expected a tensor on q's device cpu, got one on meta"):
        validate_inputs(**args(g=meta_g))
    with pytest.raises(ValueError, match=r"^initial_state: expected a tensor on q's device cpu, got one on meta"):
        validate_inputs(**args(initial_state=torch.empty(B, HV, K, V, device="meta")))
    cu = torch.tensor([0, 60], device="meta")
    with pytest.raises(ValueError, match=r"^cu_seqlens: expected a tensor on q's device cpu, got one on meta"):
        validate_inputs(**varlen_args(cu))


def test_cu_seqlens_not_1d():
    with pytest.raises(ValueError, match=r"^cu_seqlens: expected a 1-D tensor \[N \+ 1\], got 2-D"):
        validate_inputs(**varlen_args(torch.tensor([[0, 60]])))


def test_cu_seqlens_not_integer():
    with pytest.raises(TypeError, match=r"^cu_seqlens: expected dtype torch.int32 or torch.int64, got torch.float32"):
        validate_inputs(**varlen_args(torch.tensor([0.0, 60.0])))


def test_cu_seqlens_too_short():
    with pytest.raises(ValueError, match=r"^cu_seqlens: expected at least 2 entries .* got 1"):
        validate_inputs(**varlen_args(torch.tensor([0])))


def test_cu_seqlens_not_starting_at_zero():
    with pytest.raises(ValueError, match=r"^cu_seqlens: expected cu_seqlens\[0\] = 0, got 5"):
        validate_inputs(**varlen_args(torch.tensor([5, 30, 60])))


def test_cu_seqlens_decreasing():
    with pytest.raises(ValueError, match=r"^cu_seqlens: expected non-decreasing .* cu_seqlens\[1\] = 40 > cu_seqlens\[2\] = 30"):
        validate_inputs(**varlen_args(torch.tensor([0, 40, 30, 60])))


def test_cu_seqlens_not_ending_at_T():
    with pytest.raises(ValueError, match=r"^cu_seqlens: expected cu_seqlens\[-1\] = T = 60 \(q's dim 1\), got 59"):
        validate_inputs(**varlen_args(torch.tensor([0, 30, 59])))


def test_cu_seqlens_with_batch_above_one():
    with pytest.raises(ValueError, match=r"^q: expected batch size B = 1 when cu_seqlens is given .* got B = 2"):
        validate_inputs(**args(cu_seqlens=torch.tensor([0, 50, 100]), initial_state=None))


def test_cu_seqlens_host_caches_per_tensor():
    cu = torch.tensor([0, 3, 9], dtype=torch.int32)
    first = cu_seqlens_host(cu)
    assert first == [0, 3, 9]
    assert cu_seqlens_host(cu) is first                 # cached: no second read
    cu[1] = 4                                           # in-place write bumps the version counter
    assert cu_seqlens_host(cu) == [0, 4, 9]
    other = torch.tensor([0, 5, 9], dtype=torch.int32)  # a different tensor never gets another's values
    assert cu_seqlens_host(other) == [0, 5, 9]
