"""GPU tests of the decode kernel (recurrent_fwd) against the float64 reference (skip without an H100/H200).

Every output buffer starts as NaN (ops._POISON), so an element the kernel forgets to write fails; the
reference is patched out of fused_recurrent_gated_delta_rule, so a call that silently fell back fails too.

Tolerances, from the arithmetic: the state is fp32 end to end, so ht differs from float64 by fp32
rounding over a few tokens (~1e-7 relative, measured with a CPU emulation of the kernel's order of
operations; exp2/rsqrt are the fast approximate instructions): STATE_TOL = 1e-5. o is the fp32 result
rounded once to the output dtype: relative L2 ~1.6e-3 in bf16 (8-bit mantissa) and ~2e-4 in fp16 (11-bit),
as emulated: O_TOL gives each about 2.5x headroom.
"""

import os

import pytest
import torch

os.environ.setdefault("FLASHQLA_POISON", "1")

import flashqla  # noqa: E402
from flashqla import api, reference  # noqa: E402
from test_gpu_kernels import make_inputs, rel_l2  # noqa: E402

pytestmark = pytest.mark.gpu
O_TOL = {torch.bfloat16: 4e-3, torch.float16: 5e-4}
STATE_TOL = 1e-5
RECURRENT = flashqla.fused_recurrent_gated_delta_rule


@pytest.fixture(autouse=True)
def _kernel_path(poisoned_kernels, monkeypatch):

    def _no_reference(*a, **kw):
        raise AssertionError("fused_recurrent_gated_delta_rule fell back to the reference")

    monkeypatch.setattr(api, "recurrent_gated_delta_rule_ref", _no_reference)


def oracle(inp, l2norm, scale=None):
    ins = {k_: (v_.double() if torch.is_floating_point(v_) else v_) if v_ is not None else None
           for k_, v_ in inp.items()}
    return reference.naive_recurrent_gated_delta_rule_f64(
        **ins, scale=scale, output_final_state=True, use_qk_l2norm_in_kernel=l2norm)


def as_fixed_length(inp, B):
    """Packed inputs of B equal-length sequences -> fixed-length [B, T, ...] inputs (cu_seqlens None)."""
    out = dict(inp, cu_seqlens=None)
    for key in ("q", "k", "v", "g", "beta"):
        x = inp[key]
        out[key] = x.reshape(B, x.shape[1] // B, *x.shape[2:])
    return out


def check(o, ht, o_ref, ht_ref, dtype):
    assert o.dtype == dtype and ht.dtype == torch.float32
    assert o.shape == o_ref.shape and ht.shape == ht_ref.shape
    assert rel_l2(o, o_ref) < O_TOL[dtype]
    assert rel_l2(ht, ht_ref) < STATE_TOL


@pytest.mark.parametrize("block_v", ["32", "16"])
@pytest.mark.parametrize("ratio", [1, 2, 4])
@pytest.mark.parametrize("l2norm", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("N", [1, 37])
def test_decode_matches_float64(monkeypatch, N, dtype, l2norm, ratio, block_v):
    """One token a sequence with a carried state: N = 1 packed varlen, N = 37 fixed length (B = 37, T = 1)."""
    monkeypatch.setenv("FLASHQLA_RECURRENT_BLOCK_V", block_v)
    inp = make_inputs([1] * N, H=4, HV=4 * ratio, dtype=dtype, l2norm_in_kernel=l2norm,
                      seed=N + 7 * ratio + 100 * l2norm)
    if N > 1:
        inp = as_fixed_length(inp, N)
    o, ht = RECURRENT(**inp, output_final_state=True, use_qk_l2norm_in_kernel=l2norm)
    check(o, ht, *oracle(inp, l2norm), dtype)


@pytest.mark.parametrize("block_v", ["32", "16"])
@pytest.mark.parametrize("l2norm", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_multi_token_varlen(monkeypatch, dtype, l2norm, block_v):
    """Sequences of 5, 0, 17, 1 tokens; heads with g down to -20 and heads with g = 0; a run-time scale."""
    monkeypatch.setenv("FLASHQLA_RECURRENT_BLOCK_V", block_v)
    inp = make_inputs([5, 0, 17, 1], H=2, HV=8, dtype=dtype, l2norm_in_kernel=l2norm, seed=31 + l2norm)
    o, ht = RECURRENT(**inp, scale=0.3, output_final_state=True, use_qk_l2norm_in_kernel=l2norm)
    o_ref, ht_ref = oracle(inp, l2norm, scale=0.3)
    check(o, ht, o_ref, ht_ref, dtype)
    assert torch.equal(ht[1], inp["initial_state"][1])  # the empty sequence's state passes through exactly


@pytest.mark.parametrize("block_v", ["32", "16"])
def test_no_initial_state_and_no_final_state(monkeypatch, block_v):
    monkeypatch.setenv("FLASHQLA_RECURRENT_BLOCK_V", block_v)
    inp = make_inputs([3, 0, 9], H=1, HV=4, h0=False, seed=37)
    o, ht = RECURRENT(**inp, output_final_state=True)
    o_ref, ht_ref = oracle(inp, False)
    check(o, ht, o_ref, ht_ref, torch.bfloat16)
    assert torch.equal(ht[1], torch.zeros_like(ht[1]))
    o2, none = RECURRENT(**inp)
    assert none is None and torch.equal(o2, o)


def test_fixed_length_multi_token_with_bf16_state():
    """B = 3 rows of 7 tokens; the initial state given in bf16 is upcast, the final state is fp32."""
    inp = as_fixed_length(make_inputs([7, 7, 7], H=2, HV=4, seed=41), 3)
    inp["initial_state"] = inp["initial_state"].to(torch.bfloat16)
    o, ht = RECURRENT(**inp, output_final_state=True)
    check(o, ht, *oracle(inp, False), torch.bfloat16)


def test_all_sequences_empty():
    inp = make_inputs([0, 0], H=1, HV=2, seed=43)
    o, ht = RECURRENT(**inp, output_final_state=True)
    assert o.shape == (1, 0, 2, 128) and torch.equal(ht, inp["initial_state"])
    inp["initial_state"] = None
    o, ht = RECURRENT(**inp, output_final_state=True)
    assert torch.equal(ht, torch.zeros_like(ht))


@pytest.mark.parametrize("seqlens", [[1] * 37, [5, 0, 17, 1]])
def test_deterministic_bitwise(seqlens):
    inp = make_inputs(seqlens, H=2, HV=8, seed=47)
    outs = [RECURRENT(**inp, output_final_state=True, use_qk_l2norm_in_kernel=True) for _ in range(3)]
    for o, ht in outs[1:]:
        assert torch.equal(o, outs[0][0]) and torch.equal(ht, outs[0][1])


def test_cuda_graph_decode_loop():
    """Capture one decode step (B = 37, T = 1, state in and out), replay it over 3 steps of new tokens."""
    B, H, HV = 37, 4, 16
    steps = [as_fixed_length(make_inputs([1] * B, H=H, HV=HV, l2norm_in_kernel=True, seed=50 + i), B)
             for i in range(3)]
    static = {k_: v_.clone() for k_, v_ in steps[0].items() if v_ is not None}

    def step():
        return RECURRENT(static["q"], static["k"], static["v"], static["g"], static["beta"],
                         initial_state=static["initial_state"], output_final_state=True,
                         use_qk_l2norm_in_kernel=True)

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up (loads the binary, fills the fixed-length offsets cache)
        step()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o_g, ht_g = step()

    state = steps[0]["initial_state"]
    for inp in steps:
        eager_o, eager_ht = RECURRENT(**dict(inp, initial_state=state), output_final_state=True,
                                      use_qk_l2norm_in_kernel=True)
        for key in ("q", "k", "v", "g", "beta"):
            static[key].copy_(inp[key])
        static["initial_state"].copy_(state)
        graph.replay()
        torch.cuda.synchronize()
        assert torch.equal(o_g, eager_o) and torch.equal(ht_g, eager_ht)
        state = eager_ht


def test_views_at_unaligned_offsets():
    """q, k, v and the state as views 2 bytes / 4 bytes past an aligned address (the op copies them)."""
    inp = make_inputs([1, 1, 1], H=2, HV=4, seed=53)

    def shifted(x):
        buf = torch.empty(x.numel() + 1, dtype=x.dtype, device=x.device)
        y = buf[1:].view(x.shape)
        y.copy_(x)
        return y

    odd = {k_: shifted(v_) if k_ in ("q", "k", "v", "initial_state") else v_ for k_, v_ in inp.items()}
    assert odd["q"].data_ptr() % 16 != 0 and odd["initial_state"].data_ptr() % 16 != 0
    o, ht = RECURRENT(**odd, output_final_state=True)
    check(o, ht, *oracle(inp, False), torch.bfloat16)
