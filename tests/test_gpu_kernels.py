"""GPU tests of the prebuilt sm_90a kernels against the float64 reference (skip without an H100/H200).

Every output buffer is poisoned with NaN before the kernels run (FLASHQLA_POISON=1), so an element a
kernel forgets to write fails the comparison.
"""

import math
import os

import pytest
import torch

os.environ.setdefault("FLASHQLA_POISON", "1")

import flashqla  # noqa: E402
from flashqla import reference  # noqa: E402

pytestmark = pytest.mark.gpu
TOL = 5e-3


def rel_l2(x, ref):
    x, ref = x.double(), ref.double()
    assert torch.isfinite(x).all(), "non-finite (unwritten?) elements in the kernel output"
    return ((x - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def make_inputs(seqlens, H, HV, dtype=torch.bfloat16, l2norm_in_kernel=False, h0=True, seed=0,
                strong_decay=True, device="cuda"):
    """Packed varlen inputs: strong decay on some heads (g down to -20), 25% zero-decay heads."""
    gen = torch.Generator(device="cpu").manual_seed(seed)
    T = sum(seqlens)
    K = V = 128
    q = torch.randn(1, T, H, K, generator=gen)
    k = torch.randn(1, T, H, K, generator=gen)
    if not l2norm_in_kernel:
        q, k = reference.l2norm(q), reference.l2norm(k)
    v = torch.randn(1, T, HV, V, generator=gen)
    g = torch.nn.functional.logsigmoid(torch.randn(1, T, HV, generator=gen)) / 4
    if strong_decay:
        strong = torch.arange(HV) % 4 == 1
        g[..., strong] = -20 * torch.rand(1, T, int(strong.sum()), generator=gen)
    g[..., torch.arange(HV) % 4 == 0] = 0.0
    beta = torch.sigmoid(torch.randn(1, T, HV, generator=gen))
    cu = torch.tensor([0] + list(torch.tensor(seqlens).cumsum(0)), dtype=torch.int32)
    N = len(seqlens)
    s0 = 0.1 * torch.randn(N, HV, K, V, generator=gen) if h0 else None
    to = lambda t, dt=None: None if t is None else t.to(device=device, dtype=dt or t.dtype)  # noqa: E731
    return dict(q=to(q, dtype), k=to(k, dtype), v=to(v, dtype), g=to(g), beta=to(beta),
                initial_state=to(s0), cu_seqlens=to(cu))


def oracle(inp, l2norm):
    ins = {k_: (v_.double() if torch.is_floating_point(v_) else v_) if v_ is not None else None
           for k_, v_ in inp.items()}
    return reference.naive_recurrent_gated_delta_rule_f64(
        **ins, output_final_state=True, use_qk_l2norm_in_kernel=l2norm)


@pytest.fixture(autouse=True)
def _needs_kernels(kernels_ready):
    pass


@pytest.mark.parametrize("merge", ["regs", "tc", "mma", "mma16", "gva"])
def test_kkt_solve_matches_float64(monkeypatch, merge):
    from flashqla import ops
    from flashqla.ops import chunk_offsets_for, chunk_table_for, kkt_solve

    monkeypatch.setattr(ops, "KKT_MERGE", merge)

    inp = make_inputs([100, 64, 3], H=2, HV=4, seed=19)
    k, beta, cu = inp["k"][0], inp["beta"][0].float().contiguous(), inp["cu_seqlens"]
    g = inp["g"][0].float().contiguous()
    a, rows = kkt_solve(k, beta, g, chunk_table_for(cu, chunk_offsets_for(cu), k.shape[0]), 4, False)
    T = k.shape[0]
    assert rows.shape == (2, 4, (T + 3) // 4 * 4 + 64 * 3)  # G and beta (no 1/||k|| row without l2norm)
    kd, bd, gd = k.double(), beta.double(), g.double()
    for n in range(3):
        s, e = int(cu[n]), int(cu[n + 1])
        for c0 in range(s, e, 64):
            c1 = min(c0 + 64, e)
            for hv in range(4):
                kc = kd[c0:c1, hv // 2]
                L = torch.tril((kc @ kc.T) * bd[c0:c1, hv], -1)  # K K^T diag(beta): A~ carries no beta
                ref = torch.linalg.inv(torch.eye(c1 - c0, dtype=torch.float64, device=k.device) + L)
                G = gd[c0:c1, hv].cumsum(0)
                gate = torch.tril(torch.exp(G[:, None] - G[None, :]))
                r0 = ops.rows_start(s, n) + (c0 - s)  # the chunk's first factor row
                r1 = r0 + (c1 - c0)
                assert rel_l2(rows[0, hv, r0:r1], G / math.log(2)) < 1e-5  # G log2(e): log2 units
                assert torch.equal(rows[1, hv, r0:r1], beta[c0:c1, hv])  # beta, Vn's factor in chunk_fwd's output
                assert not rows[:, hv, r1:r0 + 64].any()  # past the sequence's end: zeros up to the chunk's end
                # only the 16 x 16 blocks on or below the diagonal are stored (a_tile.py); there, columns past
                # the chunk's end are zero
                n_rows = c1 - c0
                want = torch.zeros(n_rows, 64, dtype=torch.float64, device=k.device)
                want[:, :n_rows] = ref * gate
                rows_i = torch.arange(n_rows, device=k.device)[:, None] // 16
                stored = torch.arange(64, device=k.device)[None, :] // 16 <= rows_i
                got = a[c0:c1, hv].double()
                assert rel_l2(got[stored], want[stored]) < TOL
                assert not got[stored & (torch.arange(64, device=k.device)[None, :] >= n_rows)].any()
                if c0 == s and n > 0:  # a sequence's first chunk after another's is stored whole: zeros above
                    assert not got[~stored].any()


@pytest.mark.parametrize("l2norm", [False, True])
def test_kkt_gva_fetch_forms_agree(monkeypatch, l2norm):
    """kkt_solve_gva's two factor loads (every head's at once by 16-byte copies, or a head at a time by 4-byte ones)
    give bitwise the same A~ and rows at GVA 4 (ragged, an empty sequence, a partial chunk)."""
    from flashqla import ops
    from flashqla.ops import chunk_offsets_for, chunk_table_for, kkt_solve

    inp = make_inputs([300, 0, 129, 64, 1], H=2, HV=8, l2norm_in_kernel=l2norm, seed=73 + l2norm)
    k, cu = inp["k"][0], inp["cu_seqlens"]
    beta, g = inp["beta"][0].float().contiguous(), inp["g"][0].float().contiguous()
    table = chunk_table_for(cu, chunk_offsets_for(cu), k.shape[0])
    outs = {}
    for form in ("once", "per_head"):
        monkeypatch.setattr(ops, "kkt_gva_fetch", lambda H, HV, form=form: form)
        outs[form] = kkt_solve(k, beta, g, table, 8, l2norm)
    assert_kkt_outputs_equal(outs["once"], outs["per_head"], cu)


@pytest.mark.parametrize("ratio", [1, 2, 4])
@pytest.mark.parametrize("l2norm", [False, True])
def test_kkt_gva_grid_orders_agree(monkeypatch, ratio, l2norm):
    """kkt_solve_gva launched key heads fastest (the default) or chunk slots fastest (past gridDim.y's limit) gives
    bitwise the same A~ and rows (ragged, an empty sequence, partial chunks; GVA 4 takes the other factor load)."""
    from flashqla import ops
    from flashqla.ops import chunk_offsets_for, chunk_table_for, kkt_solve

    inp = make_inputs([300, 0, 129, 64, 1, 200], H=3, HV=3 * ratio, l2norm_in_kernel=l2norm, seed=83 + ratio)
    k, cu = inp["k"][0], inp["cu_seqlens"]
    beta, g = inp["beta"][0].float().contiguous(), inp["g"][0].float().contiguous()
    table = chunk_table_for(cu, chunk_offsets_for(cu), k.shape[0])
    outs, names = {}, {}
    for order in ("heads", "slots"):
        monkeypatch.setattr(ops, "kkt_gva_order", lambda num_slots, order=order: order)
        outs[order] = kkt_solve(k, beta, g, table, 3 * ratio, l2norm)
        names[order] = ops.bind_kkt(k.dtype, l2norm, True, k.shape[0], 3, 3 * ratio, len(cu) - 1, table,
                                    k.device.index).binary.name
    assert "grid_order-slots" in names["slots"] and "grid_order" not in names["heads"], names
    assert_kkt_outputs_equal(outs["heads"], outs["slots"], cu)


@pytest.mark.parametrize("ratio", [1, 4])
def test_kkt_slot_orders_agree(monkeypatch, ratio):
    """kkt_solve's chunk slots in the chunk-major orders (ops.chunk_table_for) give bitwise the A~ and rows of the
    "sequences" order, a sequence's first chunk stored whole in each (else a partial last chunk before it would read
    poisoned upper blocks), and the whole forward gives bitwise the same o and final state (ragged, an empty
    sequence, partial chunks)."""
    from flashqla import ops
    from flashqla.ops import chunk_offsets_for, chunk_table_for, kkt_solve

    inp = make_inputs([300, 0, 129, 64, 1, 200], H=3, HV=3 * ratio, seed=91 + ratio)
    k, cu = inp["k"][0], inp["cu_seqlens"]
    beta, g = inp["beta"][0].float().contiguous(), inp["g"][0].float().contiguous()
    outs, fwd = {}, {}
    for order in ("sequences", "chunks_last_first", "chunks_first_last"):
        table = chunk_table_for(cu, chunk_offsets_for(cu), k.shape[0], order=order)
        outs[order] = kkt_solve(k, beta, g, table, 3 * ratio, False)
        monkeypatch.setattr(ops, "KKT_SLOTS", order)
        run = dict(inp, cu_seqlens=cu.clone())  # a new tensor: the runtime's chunk table is cached per cu_seqlens
        fwd[order] = flashqla.chunk_gated_delta_rule(**run, output_final_state=True)
    for order in ("chunks_last_first", "chunks_first_last"):
        assert_kkt_outputs_equal(outs["sequences"], outs[order], cu)
        a1, a2 = outs["sequences"][0], outs[order][0]
        for s_ in cu[1:-1].tolist():  # the first chunks after another sequence's tokens: stored whole
            if s_ < k.shape[0]:
                assert torch.equal(a1[s_:s_ + 16], a2[s_:s_ + 16]) and a2[s_:s_ + 16].isfinite().all()
        for x, y in zip(fwd["sequences"], fwd[order]):
            assert torch.equal(x, y), order
    o_ref, ht_ref = oracle(inp, False)
    assert rel_l2(fwd["chunks_last_first"][0], o_ref) < TOL
    assert rel_l2(fwd["chunks_last_first"][1], ht_ref) < TOL


def assert_kkt_outputs_equal(out1, out2, cu):
    """Two kkt_solve results (a, rows) are bitwise equal wherever kkt_solve writes: each chunk's blocks on or below
    the diagonal (a_tile.py) and each sequence's factor rows up to its last chunk's end."""
    from flashqla import ops

    (a1, r1), (a2, r2) = out1, out2
    HV = a1.shape[1]
    rows_i = torch.arange(64, device=a1.device)[:, None] // 16
    stored = torch.arange(64, device=a1.device)[None, :] // 16 <= rows_i  # the blocks a chunk stores (a_tile.py)
    for n_, (s_, e_) in enumerate(zip(cu[:-1].tolist(), cu[1:].tolist())):
        for c0 in range(s_, e_, 64):
            m = stored[:min(64, e_ - c0), None, :].expand(-1, HV, -1)
            assert torch.equal(a1[c0:c0 + m.shape[0]][m], a2[c0:c0 + m.shape[0]][m])
        r0 = ops.rows_start(s_, n_)
        r_end = r0 + (e_ - s_ + 63) // 64 * 64  # rows past the sequence's end up to its last chunk's end are zeros
        assert torch.equal(r1[:, :, r0:r_end], r2[:, :, r0:r_end])


@pytest.mark.parametrize("l2norm", [False, True])
def test_kkt_rows_equal_kkt_solve_rows(monkeypatch, l2norm):
    """kkt_solve's rows-only pass (chunk_fwd's fused-inverse variant; ROWS_PASS "kkt", which the in-kernel norms
    always take) writes bitwise the rows of the full pass, and nothing else: the same rows are unwritten (NaN under
    poisoning) in both."""
    from flashqla import ops
    from flashqla.ops import chunk_offsets_for, chunk_table_for, kkt_rows, kkt_solve

    monkeypatch.setattr(ops, "ROWS_PASS", "kkt")

    inp = make_inputs([100, 0, 64, 3, 200], H=2, HV=6, seed=23)
    k, beta, cu = inp["k"][0], inp["beta"][0].float().contiguous(), inp["cu_seqlens"]
    g = inp["g"][0].float().contiguous()
    table = chunk_table_for(cu, chunk_offsets_for(cu), k.shape[0])
    _, rows = kkt_solve(k, beta, g, table, 6, l2norm)
    rows_only = kkt_rows(k, beta, g, table, 6, l2norm)
    assert rows.isfinite().any()
    torch.testing.assert_close(rows_only, rows, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("H,HV", [(2, 6), (4, 12), (16, 16)])
def test_factor_rows_equal_kkt_solve_rows(monkeypatch, H, HV):
    """factor_rows (a warp a chunk slot and value head, ROWS_PASS "warps") writes bitwise the rows of kkt_solve's
    full pass, and nothing else (the same rows unwritten, NaN under poisoning): value heads not a multiple of its CTA's
    8 warps, GVA 1-3, ragged sequences with an empty one."""
    from flashqla import ops
    from flashqla.ops import chunk_offsets_for, chunk_table_for, kkt_rows, kkt_solve

    inp = make_inputs([100, 0, 64, 3, 200], H=H, HV=HV, seed=37)
    k, beta, cu = inp["k"][0], inp["beta"][0].float().contiguous(), inp["cu_seqlens"]
    g = inp["g"][0].float().contiguous()
    table = chunk_table_for(cu, chunk_offsets_for(cu), k.shape[0])
    _, rows = kkt_solve(k, beta, g, table, HV, False)
    monkeypatch.setattr(ops, "ROWS_PASS", "warps")
    rows_warps = kkt_rows(k, beta, g, table, HV, False)
    assert rows.isfinite().any()
    torch.testing.assert_close(rows_warps, rows, rtol=0, atol=0, equal_nan=True)


def test_fused_forward_with_factor_rows_bitwise(monkeypatch):
    """The fused-inverse forward with its rows from factor_rows (ROWS_PASS "warps") equals the one with kkt_solve's
    rows-only pass bit for bit (ragged, an empty sequence, GVA 2, strong decay)."""
    from flashqla import fast_path, ops

    monkeypatch.setenv("FLASHQLA_BLOCK_V", "128")
    monkeypatch.setattr(ops, "FUSED_INVERSE", True)
    inp = make_inputs([300, 0, 64, 1, 777, 63], H=2, HV=4, seed=41)
    outs = []
    for rows_pass in ("kkt", "warps"):
        monkeypatch.setattr(ops, "ROWS_PASS", rows_pass)
        fast_path._PLANS.clear()  # a stored plan keeps the launches it bound
        outs.append(flashqla.chunk_gated_delta_rule(**inp, output_final_state=True))
    assert outs[0][0].isfinite().all() and outs[0][1].isfinite().all()
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])


@pytest.mark.parametrize("block_v", ["128", "128-kkt", "64"])
@pytest.mark.parametrize("ratio", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("l2norm", [False, True])
def test_chunk_forward_matches_float64(monkeypatch, block_v, ratio, l2norm):
    """block_v "128": chunk_fwd forms the inverse itself (fused_inverse); "128-kkt": A~ from kkt_solve (GVA 4:
    kkt_solve_gva's factor_fetch "once"; GVA 8: above its MAX_GVA, "per_head")."""
    from flashqla import ops

    monkeypatch.setenv("FLASHQLA_BLOCK_V", block_v[:3].rstrip("-"))
    monkeypatch.setattr(ops, "FUSED_INVERSE", block_v == "128")
    seqlens = [130, 0, 64, 1, 257, 63]
    inp = make_inputs(seqlens, H=2, HV=2 * ratio, l2norm_in_kernel=l2norm, seed=ratio + 10 * l2norm)
    o, ht = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True, use_qk_l2norm_in_kernel=l2norm)
    o_ref, ht_ref = oracle(inp, l2norm)
    assert rel_l2(o, o_ref) < TOL
    assert rel_l2(ht, ht_ref) < TOL


def test_many_ragged_sequences():
    """41 sequences of 0-149 tokens (two forced empty, many shorter than a chunk): kkt_solve's chunk table has
    many short rows and trailing empty slots."""
    gen = torch.Generator().manual_seed(41)
    seqlens = torch.randint(0, 150, (41,), generator=gen).tolist()
    seqlens[3] = seqlens[17] = 0
    inp = make_inputs(seqlens, H=2, HV=4, seed=41)
    o, ht = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    o_ref, ht_ref = oracle(inp, False)
    assert rel_l2(o, o_ref) < TOL
    assert rel_l2(ht, ht_ref) < TOL


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_fixed_length_batch_and_no_initial_state(dtype):
    inp = make_inputs([200, 200, 200], H=2, HV=4, dtype=dtype, h0=False, seed=3)
    B, T = 3, 200
    q, k = inp["q"].view(B, T, 2, 128), inp["k"].view(B, T, 2, 128)
    v = inp["v"].view(B, T, 4, 128)
    g, beta = inp["g"].view(B, T, 4), inp["beta"].view(B, T, 4)
    o, ht = flashqla.chunk_gated_delta_rule(q, k, v, g, beta, output_final_state=True)
    o_ref, ht_ref = reference.naive_recurrent_gated_delta_rule_f64(
        q.double(), k.double(), v.double(), g.double(), beta.double(), output_final_state=True)
    assert rel_l2(o, o_ref) < TOL and rel_l2(ht, ht_ref) < TOL


@pytest.mark.parametrize("ratio", [2, 4])
def test_unaligned_gates(ratio):
    """fp32 g and beta whose data starts 4 bytes past a 16-byte boundary: kkt_solve_gva's "once" (GVA 4) loads a
    token's gates of a key head's value heads by one 16-byte copy, so the runtime passes an aligned copy."""
    inp = make_inputs([300, 0, 129], H=2, HV=2 * ratio, seed=71 + ratio)
    for name in ("g", "beta"):
        t = inp[name].float()
        buf = torch.empty(t.numel() + 1, dtype=torch.float32, device=t.device)
        buf[1:].copy_(t.flatten())
        inp[name] = buf[1:].view(t.shape)
        assert inp[name].data_ptr() % 16 != 0
    o, ht = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    o_ref, ht_ref = oracle(inp, False)
    assert rel_l2(o, o_ref) < TOL and rel_l2(ht, ht_ref) < TOL


def test_long_sequence_strong_decay():
    inp = make_inputs([4096 + 17], H=1, HV=2, seed=5)
    o, ht = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    o_ref, ht_ref = oracle(inp, False)
    assert rel_l2(o, o_ref) < TOL and rel_l2(ht, ht_ref) < TOL


def test_scale_is_a_runtime_value():
    inp = make_inputs([100], H=1, HV=1, seed=7)
    o1, _ = flashqla.chunk_gated_delta_rule(**inp, scale=0.5)
    o2, _ = flashqla.chunk_gated_delta_rule(**inp, scale=0.25)
    torch.testing.assert_close(o1.float() * 0.5, o2.float(), rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("block_v", ["128", "64"])
def test_deterministic_bitwise(monkeypatch, block_v):
    monkeypatch.setenv("FLASHQLA_BLOCK_V", block_v)
    inp = make_inputs([300, 700], H=2, HV=8, seed=11)
    outs = [flashqla.chunk_gated_delta_rule(**inp, output_final_state=True) for _ in range(3)]
    for o, ht in outs[1:]:
        assert torch.equal(o, outs[0][0]) and torch.equal(ht, outs[0][1])


def graph_replayed_forward(inp):
    """The forward on inp captured in a CUDA graph (after a warm-up on a side stream that loads the binaries and fills
    the cu_seqlens cache) and replayed once: its (o, final state)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        o, ht = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    graph.replay()
    torch.cuda.synchronize()
    return o, ht


@pytest.mark.parametrize("block_v", ["128", "64"])
def test_cuda_graph_capture(monkeypatch, block_v):
    monkeypatch.setenv("FLASHQLA_BLOCK_V", block_v)
    inp = make_inputs([300, 0, 129], H=2, HV=4, seed=13)
    eager = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    o, ht = graph_replayed_forward(inp)
    assert torch.equal(o, eager[0]) and torch.equal(ht, eager[1])


@pytest.mark.parametrize("l2norm", [False, True])
def test_fused_inverse_equals_kkt_solve_bitwise(monkeypatch, l2norm):
    """chunk_fwd's own inverse (fused_inverse, inverse_form "stripes") runs kkt_solve's operations in the same order,
    so the forward's outputs equal those with A~ from kkt_solve bit for bit (ragged, an empty sequence, GVA 2, strong
    decay)."""
    from flashqla import ops

    monkeypatch.setenv("FLASHQLA_BLOCK_V", "128")
    monkeypatch.setattr(ops, "KKT_MERGE", "mma16")  # the twin: kkt_solve's row stripes in fp16 mma, as the fused one
    monkeypatch.setattr(ops, "INVERSE_FORM", "stripes")  # (the register inverse gates before inverting: other bits)
    inp = make_inputs([300, 0, 64, 1, 777, 63], H=2, HV=4, l2norm_in_kernel=l2norm, seed=29)
    outs = []
    for fused in (True, False):
        monkeypatch.setattr(ops, "FUSED_INVERSE", fused)
        outs.append(flashqla.chunk_gated_delta_rule(**inp, output_final_state=True, use_qk_l2norm_in_kernel=l2norm))
    assert outs[0][0].isfinite().all() and outs[0][1].isfinite().all()
    assert torch.equal(outs[0][0], outs[1][0]) and torch.equal(outs[0][1], outs[1][1])


def _regs_inverse(monkeypatch):
    """The fused variant with its inverse in registers (chunk_fwd inverse_form "regs", ops.INVERSE_FORM)."""
    from flashqla import ops

    monkeypatch.setenv("FLASHQLA_BLOCK_V", "128")
    monkeypatch.setattr(ops, "FUSED_INVERSE", True)
    monkeypatch.setattr(ops, "INVERSE_FORM", "regs")


@pytest.mark.parametrize("ratio", [1, 2, 3, 4])
@pytest.mark.parametrize("l2norm", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_inverse_regs_matches_float64(monkeypatch, ratio, l2norm, dtype):
    """The register inverse (gate before the inverse, fp16 merges) against the float64 reference: ragged sequences,
    an empty one, a partial last chunk, strong decay and zero-decay heads, every GVA ratio, with and without the
    in-kernel norms, both input dtypes; and no worse than the stripes form on the same inputs by more than 10%."""
    from flashqla import ops

    _regs_inverse(monkeypatch)
    inp = make_inputs([130, 0, 64, 1, 257, 63, 700], H=2, HV=2 * ratio, dtype=dtype, l2norm_in_kernel=l2norm,
                      seed=90 + ratio + 10 * l2norm)
    o_ref, ht_ref = oracle(inp, l2norm)
    errs = {}
    for form in ("regs", "stripes"):
        monkeypatch.setattr(ops, "INVERSE_FORM", form)
        o, ht = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True, use_qk_l2norm_in_kernel=l2norm)
        errs[form] = (rel_l2(o, o_ref), rel_l2(ht, ht_ref))
    assert max(errs["regs"]) < TOL, errs
    assert errs["regs"][0] <= 1.1 * errs["stripes"][0] and errs["regs"][1] <= 1.1 * errs["stripes"][1], errs


def test_inverse_regs_long_sequence_strong_decay(monkeypatch):
    _regs_inverse(monkeypatch)
    inp = make_inputs([8192 + 17, 3000], H=1, HV=2, seed=95)
    o, ht = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    o_ref, ht_ref = oracle(inp, False)
    assert rel_l2(o, o_ref) < TOL and rel_l2(ht, ht_ref) < TOL


def test_inverse_regs_deterministic_and_graph(monkeypatch):
    """Bitwise equal over repeated runs (a race between the warps' exchange through shared memory would move the
    bits) and under CUDA graph replay."""
    _regs_inverse(monkeypatch)
    inp = make_inputs([300, 0, 129, 1000], H=2, HV=8, seed=96)
    outs = [flashqla.chunk_gated_delta_rule(**inp, output_final_state=True) for _ in range(5)]
    for o, ht in outs[1:]:
        assert torch.equal(o, outs[0][0]) and torch.equal(ht, outs[0][1])
    o, ht = graph_replayed_forward(inp)
    assert torch.equal(o, outs[0][0]) and torch.equal(ht, outs[0][1])


def test_head_split_equals_whole_launches(monkeypatch):
    """A head split (dispatch.choose_head_split: heads [0, s) at V block 128, the others by a second launch at 64)
    gives on each part's heads bitwise the outputs of a whole launch at that V block, and float64's within TOL
    (GVA 3, so the second launch's first head is not a key head's first; ragged, an empty sequence)."""
    from flashqla import dispatch, fast_path, ops

    monkeypatch.setattr(ops, "FUSED_INVERSE", False)
    monkeypatch.setenv("FLASHQLA_BLOCK_V", "128")
    inp = make_inputs([300, 0, 129, 64, 1], H=2, HV=6, seed=31)
    outs = {}
    for name, split, block_v in (("split", 4, "128"), ("128", 0, "128"), ("64", 0, "64")):
        monkeypatch.setattr(dispatch, "choose_head_split", lambda *a, s=split: s)
        monkeypatch.setenv("FLASHQLA_BLOCK_V", block_v)
        fast_path._PLANS.clear()  # a stored plan would skip choose_head_split
        outs[name] = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    o, ht = outs["split"]
    assert torch.equal(o[:, :, :4], outs["128"][0][:, :, :4]) and torch.equal(ht[:, :4], outs["128"][1][:, :4])
    assert torch.equal(o[:, :, 4:], outs["64"][0][:, :, 4:]) and torch.equal(ht[:, 4:], outs["64"][1][:, 4:])
    o_ref, ht_ref = oracle(inp, False)
    assert rel_l2(o, o_ref) < TOL and rel_l2(ht, ht_ref) < TOL


@pytest.mark.parametrize("l2norm,states", [(False, True), (True, True), (False, False)])
def test_persistent_grid_equals_one_cta_per_item(monkeypatch, l2norm, states):
    """chunk_fwd's persistent variant on a grid of fewer CTAs than items (each CTA walks several (sequence, head,
    V block) items, its stages and P's buffers running on across them, items handed out longest sequence first in
    rounds of alternating direction, the next item's initial state prefetched into L2 and loaded into registers
    before the item's final state is stored) gives bitwise the outputs of the one-CTA-an-item variant, and
    float64's within TOL: ragged lengths with odd and even chunk counts, empty sequences, partial last chunks,
    GVA 2; grids of 1, 2 and 5 CTAs; with an initial state and the final state, or neither."""
    from flashqla import fast_path, ops

    monkeypatch.setenv("FLASHQLA_BLOCK_V", "128")
    monkeypatch.setattr(ops, "FUSED_INVERSE", False)
    inp = make_inputs([300, 0, 64, 1, 777, 63, 0, 129, 200], H=2, HV=4, l2norm_in_kernel=l2norm, seed=37 + l2norm,
                      h0=states)
    outs = {}
    for ctas in (None, 1, 2, 5):
        grid = (lambda items, sms, bv, fused, chunks, max_chunks: (items, False)) if ctas is None else \
            (lambda items, sms, bv, fused, chunks, max_chunks, c=ctas: (c, True))
        monkeypatch.setattr(ops, "chunk_fwd_grid", grid)
        fast_path._PLANS.clear()  # a stored plan keeps its grid
        outs[ctas] = flashqla.chunk_gated_delta_rule(**inp, output_final_state=states, use_qk_l2norm_in_kernel=l2norm)
    o, ht = outs[None]
    assert (ht is not None) == states
    for ctas in (1, 2, 5):
        assert torch.equal(outs[ctas][0], o), f"{ctas} CTAs"
        assert ht is None or torch.equal(outs[ctas][1], ht), f"{ctas} CTAs"
    o_ref, ht_ref = oracle(inp, l2norm)
    assert rel_l2(o, o_ref) < TOL
    assert ht is None or rel_l2(ht, ht_ref) < TOL


def test_no_state_sized_intermediates():
    inp = make_inputs([8192], H=4, HV=8, seed=17, h0=False)
    flashqla.chunk_gated_delta_rule(**inp)  # warm up
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    flashqla.chunk_gated_delta_rule(**inp)
    extra = torch.cuda.max_memory_allocated() - base
    T, HV = 8192, 8
    needed = T * HV * 128 * 2 + T * HV * 64 * 2 + 2 * (T + 64) * HV * 4  # o, the chunk inverses a, factor rows
    per_chunk_states = (T // 64) * HV * 128 * 128 * 4         # what FLA's h would take
    assert extra <= needed + (1 << 20), f"forward allocated {extra} bytes, expected about {needed}"
    assert extra < per_chunk_states / 2


def test_bad_cu_seqlens_on_gpu_raise():
    inp = make_inputs([100, 50], H=1, HV=2, seed=23)
    inp["cu_seqlens"] = torch.tensor([0, 160, 150], dtype=torch.int32, device="cuda")
    with pytest.raises(ValueError, match="cu_seqlens"):
        flashqla.chunk_gated_delta_rule(**inp)


def test_all_sequences_empty():
    inp = make_inputs([0, 0], H=1, HV=2, seed=29)
    o, ht = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    assert o.shape == (1, 0, 2, 128) and torch.equal(ht, inp["initial_state"])


def test_first_call_binds_its_launches_once(monkeypatch):
    """An eager call of a new signature builds one ops.ChunkForward, runs it and keeps it for the fast path; a repeat
    builds none and gives the same bits (a misaligned input is copied on the full path first)."""
    from flashqla import fast_path, ops

    fast_path._PLANS.clear()
    built = []

    class Counting(ops.ChunkForward):
        def __init__(self, **kw):
            built.append(1)
            super().__init__(**kw)

    monkeypatch.setattr(ops, "ChunkForward", Counting)
    inp = make_inputs([300, 0, 129], H=2, HV=4, seed=67)
    o1, ht1 = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    assert len(built) == 1
    o2, ht2 = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
    assert len(built) == 1 and torch.equal(o1, o2) and torch.equal(ht1, ht2)
    o_ref, ht_ref = oracle(inp, False)
    assert rel_l2(o1, o_ref) < TOL and rel_l2(ht1, ht_ref) < TOL
    shifted = dict(inp)
    buf = torch.empty(inp["k"].numel() + 1, dtype=inp["k"].dtype, device=inp["k"].device)
    shifted["k"] = buf[1:].view_as(inp["k"]).copy_(inp["k"])
    o3, ht3 = flashqla.chunk_gated_delta_rule(**shifted, output_final_state=True)
    assert torch.equal(o1, o3) and torch.equal(ht1, ht3)


def test_fast_path_repeats_match_float64(monkeypatch):
    """A second call with the same signature skips validation and the plan (fast_path) and is still exact; new
    values in the same cu_seqlens tensor (its version moves), another cu_seqlens tensor with other offsets, and a
    misaligned input each take the full path again."""
    from flashqla import api, fast_path

    fast_path._PLANS.clear()
    validated = []
    orig = api.validate_inputs
    monkeypatch.setattr(api, "validate_inputs", lambda *a, **kw: validated.append(1) or orig(*a, **kw))

    def check(inp):
        o, ht = flashqla.chunk_gated_delta_rule(**inp, output_final_state=True)
        o_ref, ht_ref = oracle(inp, False)
        assert rel_l2(o, o_ref) < TOL and rel_l2(ht, ht_ref) < TOL

    first = make_inputs([100, 200, 65], H=2, HV=4, seed=61)
    check(first)
    assert len(validated) == 1
    second = make_inputs([100, 200, 65], H=2, HV=4, seed=62)  # new values, same shapes
    second["cu_seqlens"] = first["cu_seqlens"]
    check(second)
    assert len(validated) == 1  # served by the fast path
    first["cu_seqlens"].copy_(torch.tensor([0, 150, 300, 365], dtype=torch.int32))  # in place: version moves
    second["cu_seqlens"] = first["cu_seqlens"]
    check(second)
    assert len(validated) == 2
    third = make_inputs([365, 0, 0], H=2, HV=4, seed=63)  # another tensor: other offsets, same shape
    check(third)
    assert len(validated) == 3
    check(third)
    assert len(validated) == 3
    shifted = dict(third)  # a view 2 bytes off 16-byte alignment: the full path copies it
    buf = torch.empty(third["q"].numel() + 1, dtype=third["q"].dtype, device=third["q"].device)
    shifted["q"] = buf[1:].view_as(third["q"]).copy_(third["q"])
    check(shifted)
    assert len(validated) == 4
