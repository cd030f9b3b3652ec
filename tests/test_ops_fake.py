"""CPU tests of the op layer: fake implementations (torch.compile / meta shapes) and the cu_seqlens cache."""

import pytest
from types import SimpleNamespace
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from flashqla import dispatch, ops


def test_chunk_fwd_fake_shapes():
    with FakeTensorMode():
        T, H, HV = 300, 2, 8
        q = torch.empty(T, H, 128, dtype=torch.bfloat16)
        v = torch.empty(T, HV, 128, dtype=torch.bfloat16)
        g = torch.empty(T, HV)
        cu = torch.empty(4, dtype=torch.int32)
        o, ht = ops.chunk_fwd(q, q, v, g, g, None, cu, cu, 0.1, False, True, 128)
        assert o.shape == (T, HV, 128) and o.dtype == torch.bfloat16
        assert ht.shape == (3, HV, 128, 128) and ht.dtype == torch.float32
        o, ht = ops.chunk_fwd(q, q, v, g, g, None, cu, cu, 0.1, True, False, 64)
        assert ht.numel() == 0
        o, ht = ops.chunk_fwd(q, q, v, g, g, None, cu, cu, 0.1, False, True, 128, 5)  # heads 5-7 at 64
        assert o.shape == (T, HV, 128) and ht.shape == (3, HV, 128, 128)


def test_kkt_solve_fake_shapes():
    with FakeTensorMode():
        k = torch.empty(100, 2, 128, dtype=torch.float16)
        beta = torch.empty(100, 6)
        table = torch.empty(4, 2, dtype=torch.int32)
        a, rows = ops.kkt_solve(k, beta, beta, table, 6, True)
        assert a.shape == (100, 6, 64) and a.dtype == torch.float16
        # G, beta and 1/||k|| (l2norm)
        assert rows.shape == (3, 6, 100 + 64 * (4 - 100 // 64 - 1)) and rows.dtype == torch.float32
        rows_only = ops.kkt_rows(k, beta, beta, table, 6, True)
        assert rows_only.shape == rows.shape and rows_only.dtype == torch.float32


def test_layer_kernel_ops_fake_shapes():
    with FakeTensorMode():
        x = torch.empty(70, 2 * 256 + 512, dtype=torch.bfloat16)
        w = torch.empty(1024, 4, dtype=torch.bfloat16)
        cu = torch.empty(3, dtype=torch.int32)
        q, k, v = ops.conv_qkv(x, w, None, None, cu, cu, 256)
        assert q.shape == k.shape == (70, 256) and v.shape == (70, 512) and v.dtype == torch.bfloat16
        z = torch.empty(90, 128, dtype=torch.float16)
        out = ops.gated_rmsnorm(z, z, torch.empty(128, dtype=torch.float16), 1e-6)
        assert out.shape == (90, 128) and out.dtype == torch.float16


def test_layer_kernels_decline_off_hopper():
    """On CPU the layer helpers return None (the torch path runs) even for inputs they would take on sm_90."""
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5RMSNormGated

    from flashqla import layer_kernels

    conv = torch.nn.Conv1d(1024, 1024, 4, groups=1024, padding=3, bias=False).to(torch.bfloat16)
    mod = SimpleNamespace(conv1d=conv, activation="silu", key_dim=256, layer_idx=0, conv_kernel_size=4)
    x = torch.randn(1, 10, 1024, dtype=torch.bfloat16)
    assert layer_kernels.conv_qkv(mod, x, None, None) is None
    norm = Qwen3_5RMSNormGated(128).to(torch.bfloat16)
    y = torch.randn(4, 128, dtype=torch.bfloat16)
    assert layer_kernels.gated_rmsnorm(norm, y, y) is None


def test_chunk_offsets():
    cu = torch.tensor([0, 0, 64, 65, 200], dtype=torch.int32)
    assert ops.chunk_offsets_for(cu).tolist() == [0, 0, 1, 2, 5]


def test_chunk_table():
    """kkt_solve's slots: (first token, sequence end, factor row of the first token) per chunk in order, empty
    sequences skipped, zeros after the last chunk; T // 64 + N + 1 slots (the kernel's grid, from shapes
    alone). Sequence n's factor rows start at round_up(cu_seqlens[n], 4) + 64 n (aligned for TMA, a chunk's
    gap of zero rows after each sequence)."""
    cu = torch.tensor([0, 0, 50, 114, 300], dtype=torch.int32)
    table = ops.chunk_table_for(cu, ops.chunk_offsets_for(cu), 300, order="sequences")
    assert table.dtype == torch.int32 and table.shape == (300 // 64 + 4 + 1, 3)
    assert table.tolist() == [[0, 50, 64], [50, 114, 180], [114, 300, 308], [178, 300, 372], [242, 300, 436],
                              [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0]]
    assert ops.rows_len(300, 4) >= 436 + 64  # the last chunk's box fits
    fixed = torch.arange(3, dtype=torch.int32) * 128
    assert ops.chunk_table_for(fixed, ops.chunk_offsets_for(fixed), 256, order="sequences").tolist() == [
        [0, 128, 0], [64, 128, 64], [128, 256, 192], [192, 256, 256], [0, 0, 0], [0, 0, 0], [0, 0, 0]]
    # the runtime's order: every sequence's last chunk first, sequences ascending within a chunk index
    assert ops.chunk_table_for(fixed, ops.chunk_offsets_for(fixed), 256).tolist() == [
        [64, 128, 64], [192, 256, 256], [0, 128, 0], [128, 256, 192], [0, 0, 0], [0, 0, 0], [0, 0, 0]]
    empty = torch.zeros(3, dtype=torch.int32)  # every sequence empty: no chunk to solve
    assert not ops.chunk_table_for(empty, ops.chunk_offsets_for(empty), 0).any()


def test_chunk_table_orders():
    """The chunk-major orders hold the same slots as "sequences", chunk index by chunk index (descending for
    chunks_last_first), sequences ascending within one, the empty slots last; and the adjacency the kernels' "first
    chunk of a sequence" test reads (the slot before a sequence's chunk 0 ends at its first token) holds in each."""
    cu = torch.tensor([0, 0, 50, 114, 300, 300, 340], dtype=torch.int32)
    off = ops.chunk_offsets_for(cu)
    by_seq = ops.chunk_table_for(cu, off, 340, order="sequences").tolist()
    real = [r for r in by_seq if r[1] > r[0]]
    starts = {0, 50, 114, 300}  # the non-empty sequences' first tokens
    for order, sign in (("chunks_last_first", -1), ("chunks_first_last", 1)):
        table = ops.chunk_table_for(cu, off, 340, order=order).tolist()
        assert len(table) == len(by_seq) and table[len(real):] == [[0, 0, 0]] * (len(by_seq) - len(real))
        assert sorted(table[:len(real)]) == sorted(real)
        seqstart = {r[1]: max(s for s in starts if s <= r[0]) for r in real}  # sequence end -> its first token
        keys = [(sign * ((r[0] - seqstart[r[1]]) // 64), r[0]) for r in table[:len(real)]]
        assert keys == sorted(keys)
        for i, r in enumerate(table[:len(real)]):
            if r[0] in starts and r[0] > 0:  # a sequence's chunk 0 after another sequence's tokens
                assert i > 0 and table[i - 1][1] == r[0], (order, i)
    with pytest.raises(ValueError, match="order"):
        ops.chunk_table_for(cu, off, 340, order="random")


def test_chunk_table_cached_per_offsets():
    cu, off = dispatch.packed_seqlens(None, 2, 200, torch.device("cpu"))
    t1 = dispatch.kkt_chunk_table(cu, off, 400)
    assert dispatch.kkt_chunk_table(cu, off, 400) is t1
    assert t1.tolist()[:8] == [[192, 200, 192], [392, 400, 456], [128, 200, 128], [328, 400, 392], [64, 200, 64],
                               [264, 400, 328], [0, 200, 0], [200, 400, 264]]  # ops.KKT_SLOTS_DEFAULT


def test_packed_seqlens_cached_and_checked():
    cu = torch.tensor([0, 100, 164], dtype=torch.int64)
    a = dispatch.packed_seqlens(cu, 1, 164, cu.device)
    b = dispatch.packed_seqlens(cu, 1, 164, cu.device)
    assert a[0] is b[0] and a[0].dtype == torch.int32 and a[1].tolist() == [0, 2, 3]
    cu.add_(0)  # an in-place write invalidates the cache entry
    assert dispatch.packed_seqlens(cu, 1, 164, cu.device)[0] is not a[0]
    with pytest.raises(ValueError, match="cu_seqlens"):
        dispatch.packed_seqlens(torch.tensor([0, 120, 100, 164]), 1, 164, "cpu")
    with pytest.raises(ValueError, match="cu_seqlens"):
        dispatch.packed_seqlens(torch.tensor([0, 100, 150]), 1, 164, "cpu")


def test_dispatch_decisions_are_compile_constants():
    """The host-side decisions trace as constants (fullgraph: no graph break) and match eager."""
    import torch._dynamo

    def fn(x):
        why = dispatch.kernel_plan("chunk", x.device, x.dtype, True)
        ok = dispatch.runs_kernels_on(x.device) or dispatch.has_binary("gated_rmsnorm", (("dtype", "bfloat16"), ("dim", 128)))
        return x + ((1 if why is None else 2) + (10 if ok else 20) + dispatch.forced_block_v("FLASHQLA_BLOCK_V"))

    torch._dynamo.reset()
    x = torch.ones(3, dtype=torch.bfloat16)
    assert torch.equal(torch.compile(fn, backend="eager", fullgraph=True)(x), fn(x))
    # on the CPU the plan declines and names why
    assert dispatch.kernel_plan("chunk", x.device, x.dtype, True) == "inputs are not on a CUDA device"


def test_packed_seqlens_traced_under_compile():
    """Under torch.compile the (cu_seqlens, chunk_offsets) pair is computed in the graph, equal to eager."""
    import torch._dynamo

    def fn(cu, x):
        a, b = dispatch.packed_seqlens(cu, 1, x.shape[0], x.device)
        c, d = dispatch.packed_seqlens(None, 2, x.shape[0] // 2, x.device)
        return a, b, c, d

    torch._dynamo.reset()
    cu = torch.tensor([0, 100, 100, 164])
    x = torch.zeros(164)
    got = torch.compile(fn, backend="eager", fullgraph=True)(cu, x)
    want = fn(cu, x)
    assert all(torch.equal(g, w) and g.dtype == torch.int32 for g, w in zip(got, want))



def test_block_v_rule(monkeypatch):
    """V block 64 only while both halves fit in one wave (2 x pairs <= SMs), whatever the sequence lengths."""
    monkeypatch.delenv("FLASHQLA_BLOCK_V", raising=False)
    assert dispatch.choose_block_v(64, 132) == 64          # 2 x 64 <= 132
    assert dispatch.choose_block_v(66, 132) == 64
    assert dispatch.choose_block_v(67, 132) == 128         # a second wave of 64-blocks costs more than 128's chain
    assert dispatch.choose_block_v(128, 132) == 128
    assert dispatch.choose_block_v(256, 132) == 128
    monkeypatch.setenv("FLASHQLA_BLOCK_V", "64")
    assert dispatch.choose_block_v(1000, 132) == 64


def test_head_split_rule(monkeypatch):
    """Past the last full wave of 128-blocks, the heads whose pairs would form a partial wave run at V block 64 when
    both halves of their pairs fit in one wave; otherwise no split."""
    monkeypatch.delenv("FLASHQLA_BLOCK_V", raising=False)
    monkeypatch.delenv("FLASHQLA_HEAD_SPLIT", raising=False)
    monkeypatch.setattr(ops, "FUSED_INVERSE", False)
    split = dispatch.choose_head_split
    assert split(4, 48, 132, 128) == 33      # 192 pairs: heads 0-32 (132 pairs) at 128, 15 x 4 = 60 pairs -> 120 CTAs
    assert split(8, 24, 132, 128) == 16      # 192 pairs: 128 at 128, 8 x 8 = 64 pairs -> 128 CTAs
    assert split(4, 64, 132, 128) == 0       # 256 pairs: the remainder (124) does not fit one wave as 64-blocks
    assert split(8, 64, 132, 128) == 0       # 512 pairs
    assert split(2, 64, 132, 128) == 0       # 128 pairs: one wave already
    assert split(4, 33, 132, 128) == 0       # 132 pairs: exactly one wave
    assert split(4, 48, 132, 64) == 0        # only a 128-block launch is split
    assert split(200, 1, 132, 128) == 0      # more sequences than SMs: no whole head fills the full waves
    assert split(4, 48, 132, 128, True) == 0  # the fused inverse has no 64-block variant
    monkeypatch.setenv("FLASHQLA_HEAD_SPLIT", "0")
    assert split(4, 48, 132, 128) == 0
    monkeypatch.delenv("FLASHQLA_HEAD_SPLIT")
    monkeypatch.setenv("FLASHQLA_BLOCK_V", "128")
    assert split(4, 48, 132, 128) == 0


def test_fused_inverse_rule(monkeypatch):
    """chunk_fwd forms the inverse itself at GVA 1 and 2 without the in-kernel norms on a card below
    LARGE_CARD_MEMORY (an H100) when its 128-blocks fill the card, up to the measured pair count (2 x SMs at GVA 1
    and 2; at GVA 2 past one wave only where the split path would not split its heads);
    FLASHQLA_FUSED_INVERSE=1|0 (ops.FUSED_INVERSE) forces it, at the V blocks that have the variant."""
    monkeypatch.setattr(ops, "FUSED_INVERSE", None)
    monkeypatch.setattr(dispatch, "fused_inverse_card", lambda device: True)  # a stand-in H100
    choose, dev = dispatch.choose_fused_inverse, torch.device("cpu")
    assert choose(16, 16, 128, 132, 128, dev)          # 2B-TP1 1024x8: 128 pairs
    assert choose(16, 16, 67, 132, 128, dev) and choose(16, 16, 264, 132, 128, dev)
    assert not choose(16, 16, 66, 132, 128, dev)       # half the SMs or fewer: the split path's 64-blocks
    assert not choose(16, 16, 265, 132, 128, dev)      # past the measured range
    assert choose(16, 32, 128, 132, 128, dev)          # GVA 2, one wave: 35B-TP1 8192x4
    assert not choose(16, 32, 256, 132, 128, dev)      # GVA 2 past one wave, sequences not given: as one wave
    assert choose(16, 32, 256, 132, 128, dev, num_seqs=8)  # 35B-TP1 1024x8: no head split on the split path
    assert not choose(16, 32, 192, 132, 128, dev, num_seqs=6)  # 35B-TP1 1024x6: the split path splits its heads
    assert choose(16, 32, 128, 132, 128, dev, num_seqs=4)  # within one wave the head split does not matter
    assert not choose(16, 32, 288, 132, 128, dev, num_seqs=9)  # past two waves
    assert not choose(16, 48, 96, 132, 128, dev)       # GVA 3: 27B-TP2 8192x4 (8 / 24 there)
    assert not choose(16, 64, 128, 132, 128, dev)      # GVA 4
    assert not choose(16, 16, 128, 132, 64, dev)       # no 64-block variant
    assert not choose(16, 16, 128, 132, 128, dev, True)  # the norms of q and k in the kernels
    monkeypatch.setattr(dispatch, "fused_inverse_card", lambda device: False)  # a stand-in H200
    assert not choose(16, 16, 128, 132, 128, dev)
    monkeypatch.setattr(ops, "FUSED_INVERSE", True)
    assert choose(16, 64, 512, 132, 128, dev) and not choose(16, 64, 512, 132, 64, dev)
    monkeypatch.setattr(ops, "FUSED_INVERSE", False)
    monkeypatch.setattr(dispatch, "fused_inverse_card", lambda device: True)
    assert not choose(16, 16, 128, 132, 128, dev)


def test_fused_inverse_setting():
    """FLASHQLA_FUSED_INVERSE: 1 / 0 force the fused inverse on / off, empty or "auto" leave the choice to the
    runtime, anything else warns and means auto."""
    from flashqla import warn

    warn._reset_for_tests()
    assert ops._fused_inverse_setting("1") is True and ops._fused_inverse_setting("0") is False
    assert ops._fused_inverse_setting("") is None and ops._fused_inverse_setting("auto") is None
    with pytest.warns(UserWarning, match="FLASHQLA_FUSED_INVERSE: expected 1, 0 or auto, got 'yes'"):
        assert ops._fused_inverse_setting("yes") is None


def test_head_split_traces_without_graph_break(monkeypatch):
    """Under torch.compile the head split is traced code on a dynamic sequence count: guards, no graph break, and the
    eager choices."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    monkeypatch.delenv("FLASHQLA_BLOCK_V", raising=False)
    monkeypatch.delenv("FLASHQLA_HEAD_SPLIT", raising=False)
    monkeypatch.setattr(ops, "FUSED_INVERSE", False)

    def split(x):
        return x.sum() * 0 + dispatch.choose_head_split(x.shape[0], 48, 132, 128)

    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(split, backend="eager", dynamic=True, fullgraph=True)
    for n, want in ((4, 33), (2, 0), (3, 44), (5, 0)):  # 192 pairs -> 33; 96 -> one wave; 144 -> 44; 240 -> none
        assert compiled(torch.zeros(n)).item() == want == split(torch.zeros(n)).item(), n
    assert dict(counters["graph_break"]) == {}


def test_plan_traces_without_graph_break_for_new_batch_sizes(monkeypatch):
    """The size-dependent part of the plan is traced code: a dynamic batch size (or sequence count) gives
    guards, not a graph break, and the same choices as eager. (The static part is made to accept CPU
    tensors here; on the GPU it is the same constant function.)"""
    import torch._dynamo
    from torch._dynamo.utils import counters

    from flashqla.validation import validate_inputs

    monkeypatch.delenv("FLASHQLA_BLOCK_V", raising=False)
    monkeypatch.setattr(dispatch, "_static_decline_reason", lambda *a: None)
    monkeypatch.setattr(dispatch, "sm_count", lambda device: 132)

    def plan(q, v, g):
        problem = validate_inputs(q, q, v, g, g, None, None, None, False)
        ok, block_v = dispatch._plan("chunk", problem, q, q, v, g, g, None, True)
        return q.sum() * 0 + (block_v if ok else -1)

    torch._dynamo.reset()
    counters.clear()
    compiled = torch.compile(plan, backend="eager", dynamic=True, fullgraph=True)
    for B, T in ((2, 4096), (3, 4096), (16, 64), (40, 64)):
        q = torch.zeros(B, T, 1, 128, dtype=torch.bfloat16)
        v = torch.zeros(B, T, 4, 128, dtype=torch.bfloat16)
        g = torch.zeros(B, T, 4)
        assert compiled(q, v, g).item() == plan(q, v, g).item(), (B, T)
    assert dict(counters["graph_break"]) == {}
    # 8 / 64 pairs: both halves fit one wave (2 x pairs <= 132) -> 64; 160 pairs -> 128
    assert [plan(torch.zeros(B, T, 1, 128, dtype=torch.bfloat16), torch.zeros(B, T, 4, 128, dtype=torch.bfloat16),
                 torch.zeros(B, T, 4)).item() for B, T in ((2, 4096), (16, 64), (40, 64))] == [64, 64, 128]


def test_meta_tensors_take_the_op():
    """Meta (and other non-CUDA) tensors go through the custom op and its fake implementation, never the launch."""
    k = torch.empty(100, 2, 128, dtype=torch.bfloat16, device="meta")
    beta = torch.empty(100, 6, device="meta")
    table = torch.empty(4, 2, dtype=torch.int32, device="meta")
    a, rows = ops.kkt_solve(k, beta, beta, table, 6, True)
    assert a.device.type == "meta" and a.shape == (100, 6, 64) and rows.shape == (3, 6, 100 + 64 * 2)
    x = torch.empty(90, 128, dtype=torch.float16, device="meta")
    assert ops.gated_rmsnorm(x, x, torch.empty(128, dtype=torch.float16, device="meta"), 1e-6).shape == (90, 128)


def test_compiled_packed_seqlens_checks_values():
    """Under torch.compile a bad cu_seqlens fails a device-side assert (raised at once on the CPU)."""
    import torch._dynamo

    def fn(cu, x):
        return dispatch.packed_seqlens(cu, 1, x.shape[0], x.device)[1]

    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="eager", fullgraph=True)
    x = torch.zeros(164)
    assert compiled(torch.tensor([0, 100, 164]), x).tolist() == [0, 2, 3]
    for bad in ([0, 120, 100, 164], [0, 100, 150], [5, 100, 164]):
        with pytest.raises(RuntimeError, match="cu_seqlens"):
            compiled(torch.tensor(bad), x)


def test_cu_seqlens_cache_releases_a_tensor_it_did_not_convert():
    """An int32 cu_seqlens already on the device is its own converted copy: the cache must not keep it alive."""
    import gc
    import weakref

    cu = torch.tensor([0, 100, 164], dtype=torch.int32)
    alive = weakref.ref(cu)
    first = dispatch.packed_seqlens(cu, 1, 164, "cpu")
    again = dispatch.packed_seqlens(cu, 1, 164, "cpu")
    assert first[0] is cu and again[0] is cu and again[1] is first[1] and first[1].tolist() == [0, 2, 3]
    del cu, first, again
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("head_split, block_v", [(8, 128), (-1, 128), (3, 64)])
def test_bad_head_split_is_refused_before_any_launch(head_split, block_v):
    """ops.ChunkForward (the op's and the eager fast path's launches) names head_split when it cannot be served:
    past the value heads, negative, or with a V block other than 128."""
    from flashqla import ops

    cu = torch.tensor([0, 64], dtype=torch.int32)
    with pytest.raises(ValueError, match="head_split"):
        ops.ChunkForward(T=64, H=2, HV=8, K=128, V=128, N=1, dtype=torch.bfloat16, device=torch.device("cpu"),
                         use_l2norm=False, output_final_state=False, has_h0=False, block_v=block_v,
                         head_split=head_split, chunk_table=cu, cu_seqlens=cu, o_shape=(64, 8, 128))


def test_kkt_variant_by_head_sharing(monkeypatch):
    """"auto" runs kkt_solve per key head (kkt_solve_gva) at every GVA ratio, 1 included; an explicit
    FLASHQLA_KKT_MERGE value is taken as it is; every variant the runtime can pick is built."""
    from flashqla_kernels import specs

    monkeypatch.setattr(ops, "KKT_MERGE", "auto")
    assert [ops.kkt_variant(16, hv) for hv in (16, 32, 48, 64)] == ["gva", "gva", "gva", "gva"]
    monkeypatch.setattr(ops, "KKT_MERGE", "mma")
    assert ops.kkt_variant(16, 64) == "mma"
    built = {s.kwargs().get("merge", s.kernel) for s in specs.kkt_solve_specs() + specs.kkt_solve_gva_specs()}
    assert {"mma16", "kkt_solve_gva"} <= built
    # kkt_solve_gva's factor loads: all heads' at once at GVA 2 and 4; both forms built
    assert [ops.kkt_gva_fetch(16, hv) for hv in (16, 32, 48, 64, 128)] == ["per_head", "once", "per_head", "once",
                                                                             "per_head"]
    assert {s.kwargs()["factor_fetch"] for s in specs.kkt_solve_gva_specs()} == set(specs.KKT_GVA_FETCHES)
    assert {ops.kkt_gva_fetch(1, r) for r in range(1, 9)} <= set(specs.KKT_GVA_FETCHES)


def test_sequence_table_longest_first():
    """chunk_fwd's seq_table: (n, start, end, 0) of the sequences longest first, ties in index order, one unused row
    after them; the grid is min(items, SMs) (persistent past one wave of items no longer than the card's limit) unless
    FLASHQLA_PERSISTENT=0 asks for a CTA an item."""
    cu = torch.tensor([0, 100, 100, 400, 464, 764, 765], dtype=torch.int32)  # lengths 100, 0, 300, 64, 300, 1
    table = ops.sequence_table(cu)
    assert table.dtype == torch.int32 and table.shape == (7, 4) and table.is_contiguous()
    assert table.tolist() == [[2, 100, 400, 0], [4, 464, 764, 0], [0, 0, 100, 0], [3, 400, 464, 0],
                              [5, 764, 765, 0], [1, 100, 100, 0], [0, 0, 0, 0]]
    assert ops.chunk_fwd_grid(500, 132, 128, False, 16, 32) == ((132, True) if ops.PERSISTENT else (500, False))
    assert ops.chunk_fwd_grid(500, 132, 128, False, 32.5, 32) == (500, False)  # items longer than the card's limit
    assert ops.chunk_fwd_grid(500, 132, 128, False, 128, float("inf")) == \
        ((132, True) if ops.PERSISTENT else (500, False))
    assert ops.chunk_fwd_grid(100, 132, 128, False, 16, 32) == (100, False)
    assert ops.chunk_fwd_grid(500, 132, 64, False, 16, 32) == (500, False)  # no persistent variant at 64
    assert ops.chunk_fwd_grid(500, 132, 128, True, 16, 32) == (500, False)  # nor with the fused inverse
    from flashqla_kernels import specs

    built = {s.kwargs()["block_v"] for s in specs.chunk_fwd_specs() if s.kwargs()["persistent"]}
    assert built == set(ops.PERSISTENT_BLOCK_VS) == set(specs.PERSISTENT_BLOCK_VS)


@pytest.mark.parametrize("gib,expected", [(79.6, 32.0), (93.0, 32.0), (139.8, float("inf"))])
def test_persistent_max_chunks_by_card(monkeypatch, gib, expected):
    """The persistent grid's item-length limit: dispatch.PERSISTENT_MAX_CHUNKS on cards below 100 GiB (H100), none on
    larger ones (H200); FLASHQLA_PERSISTENT_MAX_CHUNKS overrides it on every card."""
    from flashqla import dispatch

    class Props:
        total_memory = int(gib * (1 << 30))

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: Props())
    monkeypatch.delenv("FLASHQLA_PERSISTENT_MAX_CHUNKS", raising=False)
    assert dispatch.persistent_max_chunks(torch.device("cuda", 0)) == expected
    monkeypatch.setenv("FLASHQLA_PERSISTENT_MAX_CHUNKS", "1000")
    assert dispatch.persistent_max_chunks(torch.device("cuda", 0)) == 1000.0
    monkeypatch.setenv("FLASHQLA_PERSISTENT_MAX_CHUNKS", "many")
    with pytest.raises(ValueError, match="FLASHQLA_PERSISTENT_MAX_CHUNKS"):
        dispatch.persistent_max_chunks(torch.device("cuda", 0))


def test_kkt_grid_order_rule(monkeypatch):
    """kkt_solve_gva runs key heads fastest up to gridDim.y's limit on its chunk slots, chunk slots fastest past it or
    when FLASHQLA_KKT_ORDER=slots (read at import: patched here)."""
    assert ops.kkt_gva_order(1) == "heads"
    assert ops.kkt_gva_order(ops.MAX_GRID_Y) == "heads"
    assert ops.kkt_gva_order(ops.MAX_GRID_Y + 1) == "slots"
    monkeypatch.setattr(ops, "KKT_ORDER", "slots")
    assert ops.kkt_gva_order(1) == "slots"


def test_kkt_fetch_rule(monkeypatch):
    """kkt_solve_gva loads every head's factors at once at GVA 2 and 4; FLASHQLA_KKT_FETCH (read at import: patched
    here) forces a form, "once" only up to its 4 heads."""
    assert [ops.kkt_gva_fetch(4, 4 * r) for r in (1, 2, 3, 4, 8)] == ["per_head", "once", "per_head", "once",
                                                                      "per_head"]
    monkeypatch.setattr(ops, "KKT_FETCH", "once")
    assert [ops.kkt_gva_fetch(4, 4 * r) for r in (1, 2, 4, 8)] == ["once"] * 3 + ["per_head"]
    monkeypatch.setattr(ops, "KKT_FETCH", "per_head")
    assert ops.kkt_gva_fetch(4, 16) == "per_head"


def test_kkt_switches_warn_on_unknown_values(monkeypatch):
    """FLASHQLA_KKT_ORDER / FLASHQLA_KKT_FETCH with a value they do not know warn (naming the variable, the choices
    and the value) and leave the runtime's rule in charge."""
    from flashqla import warn

    monkeypatch.setenv("FLASHQLA_KKT_ORDER", "rows")
    warn._reset_for_tests()
    with pytest.warns(UserWarning, match=r"FLASHQLA_KKT_ORDER.*heads, slots.*'rows'"):
        assert ops._env_choice("FLASHQLA_KKT_ORDER", ("heads", "slots")) == ""
    monkeypatch.setenv("FLASHQLA_KKT_FETCH", "once")
    assert ops._env_choice("FLASHQLA_KKT_FETCH", ("once", "per_head")) == "once"
