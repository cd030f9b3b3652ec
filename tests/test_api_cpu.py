"""The public functions on the CPU: validated, served by the reference, silent; and warn_once."""

from __future__ import annotations

import warnings

import pytest
import torch

import flashqla
from flashqla import api, warn
from flashqla.reference import (
    chunk_gated_delta_rule_ref,
    naive_recurrent_gated_delta_rule_f64,
    recurrent_gated_delta_rule_ref,
)

from test_reference import make_inputs, rel_l2


def test_package_exports():
    assert flashqla.chunk_gated_delta_rule is api.chunk_gated_delta_rule
    assert flashqla.fused_recurrent_gated_delta_rule is api.fused_recurrent_gated_delta_rule
    assert flashqla.reference.chunk_gated_delta_rule_ref is chunk_gated_delta_rule_ref


@pytest.mark.parametrize("fn,ref", [(flashqla.chunk_gated_delta_rule, chunk_gated_delta_rule_ref),
                                    (flashqla.fused_recurrent_gated_delta_rule, recurrent_gated_delta_rule_ref)])
def test_cpu_runs_the_reference_without_warning(fn, ref):
    inputs = make_inputs(1, 90, 2, 3, seed=41, dtype=torch.bfloat16)
    cu = torch.tensor([0, 20, 20, 90], dtype=torch.int32)
    inputs["initial_state"] = torch.randn(3, 6, 16, 8)
    kw = dict(scale=0.2, output_final_state=True, use_qk_l2norm_in_kernel=True, cu_seqlens=cu)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        o, s = fn(**inputs, **kw)
    o_ref, s_ref = ref(**inputs, **kw)
    assert o.dtype == torch.bfloat16 and s.dtype == torch.float32
    torch.testing.assert_close(o, o_ref, rtol=0, atol=0)
    torch.testing.assert_close(s, s_ref, rtol=0, atol=0)
    o64, s64 = naive_recurrent_gated_delta_rule_f64(**inputs, **kw)
    assert rel_l2(o, o64) < 1e-2 and rel_l2(s, s64) < 1e-3


@pytest.mark.parametrize("fn", [flashqla.chunk_gated_delta_rule, flashqla.fused_recurrent_gated_delta_rule])
def test_final_state_only_when_asked(fn):
    inputs = make_inputs(2, 5, 1, 2, seed=42, h0=False)
    o, s = fn(**inputs)
    assert s is None and o.shape == inputs["v"].shape


@pytest.mark.parametrize("fn", [flashqla.chunk_gated_delta_rule, flashqla.fused_recurrent_gated_delta_rule])
def test_invalid_input_raises_before_any_work(fn):
    inputs = make_inputs(2, 5, 2, 1, seed=43)
    inputs["beta"] = inputs["beta"][:, :4]
    with pytest.raises(ValueError, match=r"^beta: expected shape"):
        fn(**inputs)


@pytest.mark.parametrize("name,fn", [("try_chunk_forward", flashqla.chunk_gated_delta_rule),
                                     ("try_recurrent_forward", flashqla.fused_recurrent_gated_delta_rule)])
def test_dispatch_result_is_used_when_it_serves(monkeypatch, name, fn):
    inputs = make_inputs(1, 7, 1, 2, seed=44)
    served = (torch.randn(1, 7, 2, 8), None)
    seen = {}

    def fake(problem, *args):
        seen["problem"], seen["nargs"] = problem, len(args)
        return served

    monkeypatch.setattr(api, name, fake)
    assert fn(**inputs) is served
    assert seen["problem"].HV == 2 and seen["nargs"] == 10


def test_gradients_flow_through_public_api():
    inputs = make_inputs(1, 70, 1, 2, seed=45)
    leaves = {n: x.clone().requires_grad_() for n, x in inputs.items()}
    o, s = flashqla.chunk_gated_delta_rule(**leaves, output_final_state=True, use_qk_l2norm_in_kernel=True)
    (o.sum() + s.sum()).backward()
    for n, x in leaves.items():
        assert x.grad is not None and torch.isfinite(x.grad).all() and x.grad.abs().max() > 0, n


def test_warn_once():
    warn._reset_for_tests()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn.warn_once("a", "first a")
        warn.warn_once("a", "second a")
        warn.warn_once("b", "first b")
    assert [str(w.message) for w in caught] == ["first a", "first b"]
    warn._reset_for_tests()
    with pytest.warns(UserWarning, match="again"):
        warn.warn_once("a", "again")
    warn._reset_for_tests()


def test_varlen_under_inference_mode():
    """A cu_seqlens made under torch.inference_mode has no version counter: the call still validates and
    serves it (every call reads its values), and an in-place edit inside inference mode takes effect."""
    from flashqla import dispatch

    inputs = dict(make_inputs(1, 100, 1, 2, seed=46, N=2), use_qk_l2norm_in_kernel=True)
    want, _ = flashqla.chunk_gated_delta_rule(**inputs, cu_seqlens=torch.tensor([0, 40, 100]))
    with torch.inference_mode():
        cu = torch.tensor([0, 40, 100])
        got, _ = flashqla.chunk_gated_delta_rule(**inputs, cu_seqlens=cu)
        assert torch.allclose(got, want, atol=1e-6)
        assert dispatch.packed_seqlens(cu, 1, 100, "cpu")[1].tolist() == [0, 1, 2]
        cu[1] = 70  # in place, untracked: must not be served from a cache
        assert dispatch.packed_seqlens(cu, 1, 100, "cpu")[1].tolist() == [0, 2, 3]
        cu[1] = 120
        with pytest.raises(ValueError, match="cu_seqlens"):
            flashqla.chunk_gated_delta_rule(**inputs, cu_seqlens=cu)


def test_fast_path_signature_declines_what_it_cannot_key():
    """The fast path's signature is None for CPU tensors and for arguments it cannot hash (the full path then
    raises the argument's own error)."""
    from flashqla import fast_path

    inputs = make_inputs(1, 10, 1, 2, seed=47)
    args = (inputs["q"], inputs["k"], inputs["v"], inputs["g"], inputs["beta"])
    assert fast_path.signature(*args, None, inputs["initial_state"], False, False, None) is None  # CPU
    with pytest.raises(TypeError, match="^scale: expected None or a real number, got list"):
        flashqla.chunk_gated_delta_rule(**inputs, scale=[0.1])
