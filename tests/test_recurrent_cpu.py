"""CPU tests of the decode kernel's plumbing: the op's fake implementation, the specialisation table, the
manifest of a real build (when one exists), the block_v choice, and the lowered source (when tilelang is
importable). The kernel's numbers are checked on the GPU (test_gpu_recurrent.py)."""

import json
import sys
from pathlib import Path

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from flashqla import dispatch, ops

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # flashqla_kernels is a build-time package living at the repo root

from flashqla_kernels import specs  # noqa: E402

MANIFEST = REPO / "build" / "_binaries" / "manifest.json"
ARGS = ["q", "k", "v", "g", "beta", "h0", "ht", "cu_seqlens", "o", "scale", "flags",
        "num_tokens", "num_k_heads", "num_v_heads", "num_seqs_p1", "stream"]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_recurrent_fwd_fake_shapes(dtype):
    with FakeTensorMode():
        N, H, HV = 37, 2, 8
        q = torch.empty(N, H, 128, dtype=dtype)
        v = torch.empty(N, HV, 128, dtype=dtype)
        g = torch.empty(N, HV)
        h0 = torch.empty(N, HV, 128, 128)
        cu = torch.empty(N + 1, dtype=torch.int32)
        o, ht = ops.recurrent_fwd(q, q, v, g, g, h0, cu, 0.1, False, True, 32)
        assert o.shape == (N, HV, 128) and o.dtype == dtype
        assert ht.shape == (N, HV, 128, 128) and ht.dtype == torch.float32
        o, ht = ops.recurrent_fwd(q, q, v, g, g, None, cu, 0.1, True, False, 16)
        assert o.shape == (N, HV, 128) and ht.numel() == 0


def test_recurrent_fwd_registered_op_fake():
    """The registered torch.ops entry (what torch.compile traces) with a packed varlen call (T = 23, N = 4)."""
    with FakeTensorMode():
        q = torch.empty(23, 1, 128, dtype=torch.bfloat16)
        v = torch.empty(23, 4, 128, dtype=torch.bfloat16)
        g = torch.empty(23, 4)
        cu = torch.empty(5, dtype=torch.int32)
        o, ht = getattr(torch.ops, ops._NS).recurrent_fwd(q, q, v, g, g, None, cu, 0.5, True, True, 16)
        assert o.shape == (23, 4, 128) and ht.shape == (4, 4, 128, 128)


def test_specs_include_recurrent_fwd():
    rec = specs.recurrent_fwd_specs()
    assert len(rec) == len(specs.DTYPES) * 2 * len(specs.RECURRENT_BLOCK_VS)
    names = [s.name for s in specs.all_specs()]
    assert len(names) == len(set(names))
    assert {s.name for s in rec} <= set(names)
    assert "recurrent_fwd__block_v-32__dtype-bf16__use_l2norm-0" in names
    assert "recurrent_fwd__block_v-16__dtype-fp16__use_l2norm-1" in names
    # the other programs are still in the table
    assert {"kkt_solve", "chunk_fwd", "recurrent_fwd"} <= {s.kernel for s in specs.all_specs()}


@pytest.mark.skipif(not MANIFEST.is_file(), reason="no build (run `python -m flashqla_kernels.build`)")
def test_manifest_lists_every_spec_with_the_recurrent_signature():
    kernels = json.loads(MANIFEST.read_text())["kernels"]
    # a build restricted with --only merges into the manifest: the other programs' entries stay
    for s in specs.kkt_solve_specs() + specs.chunk_fwd_specs() + specs.recurrent_fwd_specs():
        assert s.name in kernels, s.name
    for s in specs.recurrent_fwd_specs():
        e = kernels[s.name]
        assert e["kernel"] == "recurrent_fwd" and e["params"] == dict(s.params)
        assert [a["name"] for a in e["args"]] == ARGS
        assert (MANIFEST.parent / e["library"]).is_file()


def test_block_v_choice(monkeypatch):
    monkeypatch.setenv("FLASHQLA_RECURRENT_BLOCK_V", "16")
    assert dispatch.choose_recurrent_block_v(1000, 132) == 16
    monkeypatch.setenv("FLASHQLA_RECURRENT_BLOCK_V", "32")
    assert dispatch.choose_recurrent_block_v(1, 132) == 32
    monkeypatch.delenv("FLASHQLA_RECURRENT_BLOCK_V")
    assert dispatch.choose_recurrent_block_v(32, 132) == 16 and dispatch.choose_recurrent_block_v(33, 132) == 32


def test_cpu_call_is_not_offered_to_the_kernel():
    q = torch.zeros(1, 1, 1, 128)
    assert dispatch.try_recurrent_forward(None, q, q, q, None, None, None, None, False, False, None) is None


@pytest.mark.parametrize("block_v", [32, 16])
def test_lowered_source_uses_registers_and_vector_io(block_v):
    """State in registers (no shared memory, no block barrier), float4 h0/ht traffic, a shuffle butterfly."""
    pytest.importorskip("tilelang")
    from flashqla_kernels.aot import lower_to_source
    from flashqla_kernels.recurrent_fwd import recurrent_fwd_program

    src = lower_to_source(recurrent_fwd_program("bfloat16", True, block_v))
    kernel = src[src.index("__global__ void __launch_bounds__"):src.index('extern "C" TL_EXPORT')]
    assert f"__launch_bounds__({4 * block_v}" in kernel
    assert "__shared__" not in kernel and "__syncthreads" not in kernel
    assert kernel.count("*(float4*)(s_r") == 2  # one h0 load, one ht store (unrolled over rows)
    assert "__shfl_xor_sync" in kernel and "exp2f" in kernel


def test_factor_rows_agree_between_runtime_and_kernels():
    """kkt_solve writes factor_rows(use_l2norm) per-token factor rows that chunk_fwd loads by one TMA box; the runtime
    allocates them (ops.factor_rows) without importing the build-time package, so the two must agree."""
    pytest.importorskip("tilelang")
    from flashqla_kernels.kkt_solve import factor_rows

    assert [ops.factor_rows(l2) for l2 in (False, True)] == [factor_rows(l2) for l2 in (False, True)] == [2, 3]


def test_fused_inverse_block_vs_agree_between_runtime_and_kernels():
    """At the V blocks of FUSED_INVERSE_BLOCK_VS chunk_fwd forms the chunk inverse itself and the runtime runs
    kkt_solve's rows-only pass; the runtime's constant must match the kernels' table, and every such chunk_fwd
    binary must have its rows-only kkt_solve beside it."""
    from flashqla_kernels import specs

    assert tuple(ops.FUSED_INVERSE_BLOCK_VS) == tuple(specs.FUSED_INVERSE_BLOCK_VS)
    fwd = [s.kwargs() for s in specs.chunk_fwd_specs()]
    assert all(kw["block_v"] in specs.FUSED_INVERSE_BLOCK_VS for kw in fwd if kw["fused_inverse"])
    assert {kw["block_v"] for kw in fwd if kw["fused_inverse"]} == set(specs.FUSED_INVERSE_BLOCK_VS)
    rows_only = {(s.kwargs()["dtype"], s.kwargs()["use_l2norm"]) for s in specs.kkt_solve_specs()
                 if not s.kwargs()["solve"]}
    assert {(kw["dtype"], kw["use_l2norm"]) for kw in fwd if kw["fused_inverse"]} <= rows_only
