"""kkt_solve with one CTA per (chunk slot, key head): the gva value heads that share a key head share its chunk's
K load and K K^T, and the CTA forms their gated inverses one after another.

Inputs and outputs: exactly kkt_solve's (kkt_solve.py); a differs from kkt_solve's by rounding only (L's column
factor is applied at its uses, see below), and the same inputs give the same bits on every run.

Why: kkt_solve spends ~30% of its warp samples in its prologue (the chunk table's load, then K's TMA and beta / g:
two dependent global latencies a CTA) and ~20% of its shared-memory wavefronts storing L (Nsight Compute on H200,
results/2026-11-25-h200-s21/ncu_kkt). Per key head instead of per value head, the table, K, the wgmma and S's store
are paid once for gva heads, and each head's beta and g arrive by cp.async during the previous head's solve
(kkt_solve -11% at GVA 2 to -23% at GVA 4 on H200, results/2026-11-25-h200-s21/gva_ab; the prefetch -2 to -8%,
cp_async_ab2).

Tile plan: one CTA of 128 threads per (slot, key head), grid (H, S) (key heads fastest: `grid_order`). K [C, K] by
one TMA copy into the 16 KB tile that then holds S = strict_lower(K K^T) (fp32, rows past the sequence's end masked;
with use_l2norm scaled by 1/||k_i|| 1/||k_j||, the norms from its diagonal), stored once: the diagonal blocks in
fp32, the blocks below it as an fp16 copy by stmatrix into l_s's free part (stripe_l "ldsm"). For each value head hv
= hk gva + r, r = 0..gva-1: L = S diag(beta_hv) is never stored: its column factor enters where L is read (the
substitution scales each finished row of the diagonal inverse by beta, the row stripes scale each block sum), so the
four 16 x 16 diagonal inverses (threads 0..63; threads 64..127 meanwhile form the chunk cumsum of g and the gate's
row and column factors), the row stripes (fp16 m16n8k16, B by ldmatrix.x4.trans, `solve_row_stripe_f16_ldsm`) and
the gated epilogue from registers (`gate_row_stripe`) into a bf16 staging tile of its own (8 KB: S stays live;
a_tile.py's layout), from which a full chunk's blocks on or below the diagonal leave by four TMA stores (a
sequence's first chunk whole; a partial one by masked row stores), then the head's factor rows. The runtime's
default at every GVA ratio, 1 included (ops.KKT_MERGE). With factor_fetch "per_head" (the runtime's choice except at
GVA 4) the heads' beta and g sit in a [3, 2, C] buffer, head hr in slot hr % 3, a run-time index
(`chunk_inverse.row_of`): the loop body exists once (a copy a parity made the kernel 10% slower, cp_async_ab), and
with three slots the next head's prefetch needs no CTA barrier at a head's start (kkt -1 to -4%, H100,
results/2026-11-26-h100-s26/fac3_ab); with "once" (GVA 4) all heads' arrive in the prologue (see factor_fetch). CTA
barriers are placed by hand (specs.manual_syncs). Shared memory ~31 KB ("per_head") or ~30 KB ("once") a CTA, 96
registers: 5 CTAs an SM. Why the gva heads share nothing more: L, its inverse and the gate all depend on the head's
beta and g."""

import tilelang
import tilelang.language as T

from .a_tile import a_tile_layout, first_chunk_of_sequence, store_a_lower
from .chunk_inverse import (CHUNK, XO_REGS, at, block_gate_factors, diag_block_inverse, gate_row_stripe, row_of,
                            scan_chunk_halves,
                            solve_row_stripes_f16, solve_row_stripes_f16_ldsm, store_diag_block)
from .chunk_fwd import accumulator_layout
from .kkt_solve import LOG2E, factor_rows, store_factor_rows, store_key_norms

MAX_GVA = 4  # factor_fetch "once": value heads a key head at most (fac_s's slots)


def sh_offset(blk):
    """Where row block blk's fp16 copy of S (its blocks left of the diagonal, 16 blk halves a row) starts in the row's
    halves of l_s: the fp32 diagonal block of the row takes halves 32 blk .. 32 blk + 31, so block 1's copy goes after
    it (64), blocks 2 and 3 before it (0)."""
    return T.if_then_else(blk == 1, T.int32(64), T.int32(0))


def sh_at(lh):
    """The accessor (K, r, c) -> the fp16 copy of S[16 K + r, c] in lh (l_s's rows as halves), for
    `solve_row_stripe_f16_ldsm`. l_s carries the swizzle of K's TMA tile, so the 8 rows of an ldmatrix fall on
    distinct banks."""
    return lambda K, r, c: lh[16 * K + r, c + sh_offset(K)]


def rf_at(J, i):
    """l_s's (row, column) of the gate's row factor rf[J, i] (`block_gate_factors`): rows 0..11, columns 16..31, in
    the part of l_s that block row 0 leaves free (only its diagonal block, columns 0..15, is S)."""
    return (4 * J + i // 16, 16 + i % 16)


def fac_at(hr, b, i):
    """factor_fetch "once": l_s's (row, column) of head hr's beta (b = 0) or g (b = 1) of token i: rows 0..15,
    columns 32..63, the rest of the part of l_s that block row 0 leaves free (`rf_at`); a head's 64 tokens take two
    rows."""
    return (4 * hr + 2 * b + i // 32, 32 + i % 32)


def fac_row(l_s, hr, b):
    """The accessor i -> l_s[`fac_at`(hr, b, i)] (built outside the prim_func body, as chunk_inverse.row_of)."""
    return lambda i: l_s[fac_at(hr, b, i)]


def cf_at(j):
    """l_s's (row, column) of the gate's column factor cf[j]: rows 12..15, columns 16..31."""
    return (12 + j // 16, 16 + j % 16)


def kkt_solve_gva_program(dtype: str = "bfloat16", use_l2norm: bool = False, head_dim_k: int = 128,
                          chunk_size: int = 64, threads: int = 128, min_blocks_per_sm: int = 5,
                          diag_stride: int = 20, pdl: bool = True, stripe_l: str = "ldsm",
                          gate: str = "factors", factor_fetch: str = "per_head",
                          grid_order: str = "heads"):
    """min_blocks_per_sm: the launch bound (65536 / (threads x it) registers a thread). 5 (96 registers, 4 bytes of
    spill) against 6 (80, 16 bytes): kkt_solve -1 to -5% on every row timed, spans -1 to -2% on the many-pair rows,
    outputs bitwise equal (H100, results/2026-11-26-h100-s26/gva5_ab); 7 (72, 40 bytes) was 5% slower than 6 on
    H200 (results/2026-11-25-h200-s21/gva7_ab). Fewer CTAs with more registers, as kkt_solve.py's v4h found.
    diag_stride: floats between the rows of x_s, which holds the four 16 x 16 diagonal inverses (block-local
    columns, see chunk_inverse.diag_col); 20 puts the recurrence's B-fragment loads of X_JJ on distinct banks.
    Threads 0..63 form a head's diagonal inverses while threads 64..127 form its cumsum. (Two heads a step, their
    diagonal inverses formed at once by the two halves of the CTA, was 25% slower on H200:
    results/2026-11-25-h200-s21/gva2_ab.)
    stripe_l: how the row stripes read L's blocks below the diagonal. "ldsm": S's blocks below the diagonal are
    stored once as fp16 (padded rows) and read by ldmatrix.x4.trans, beta applied to each block sum
    (`solve_row_stripe_f16_ldsm`); "lds": from the fp32 tile l_s by scalar loads, times beta, converted per use.
    With "ldsm" the fp16 copy lives in the free part of l_s (`sh_at`), written from K K^T's accumulator by one
    stmatrix.x4 a block (`store_s_f16`), so the kernel needs no more shared memory than with "lds". Measured
    with the factors below against "lds" + "exp2": kkt_solve_gva -2 to -5% on every row timed (reference row 166.1
    -> 161.3 us, 2B-TP1 1024x8 23.1 -> 22.4, two passes; H200, results/2026-11-26-h200-s30/kkt_stmatrix_ab). Its
    first form, an element-wise fp16 store with the swizzle's index math an element, was 5-19% slower (a separate
    tile or in l_s: results/2026-11-26-h200-s29/kkt_ldsm_ab, kkt_ldsm_inplace_ab).
    gate: how the epilogue gates the blocks below the diagonal. "factors": threads 64..127, after the cumsum and
    while threads 0..63 substitute, form a row and a column factor a token (`block_gate_factors`), and the epilogue
    multiplies by them (`gate_row_stripe`); "exp2": an exp2 an element (the diagonal blocks always).
    factor_fetch: how the heads' beta and g reach shared memory. "per_head": one 4-byte cp.async a token, head and
    tensor, the next head's during this one's solve (three slots); "once": all gva heads' in the prologue, one
    16-byte (GVA 4) or 8-byte (GVA 2) cp.async a token and tensor into a token-major tile, spread head-major by the
    loading threads once K K^T and S's store are issued. Each such gather costs the L1 one wavefront a 32-byte
    sector, 32 an instruction (Nsight Compute, results/2026-11-26-h200-s30/ncu_kkt: the 4-byte copies 512 of ~3400
    shared wavefronts a CTA at GVA 4, with L1/TEX at 82%), so "once" has a quarter of them at GVA 4. Measured
    against "per_head" (H200, results/2026-11-26-h200-s30/fac_once_ab2, timeline, two passes): kkt_solve_gva -3 to
    -6% at GVA 4 (reference row 161.4 -> 153.2 us), +1.5 to +3.5% at GVA 2, +9 to +10% at GVA 1 and 3; the runtime
    took "once" at GVA 4 only (ops.kkt_gva_fetch: fac_once_ab3, reference row 161.1 -> 153.1 us, the other ratios
    unchanged). Outputs bitwise equal. "once" keeps its tiles in x_s's and l_s's free space (`fac_at`): against two
    tiles of its own (2.5 KB more a CTA) kkt_solve_gva -0.5 to -1.5% on the long GVA-4 rows (fac_in_ls_ab).
    With "once" a head costs two CTA barriers instead of four (`two_barriers`): no barrier at a head's start (the
    previous head's last one follows every read of x_s, gc_s and the gate factors, since its factor rows are stored
    before it) and none before the gate (the previous head's bulk store is waited for before the barrier that
    publishes the diagonal inverses). Measured on H200 against four (results/2026-11-27-h200-s39/kkt_barriers_ab1,
    timeline, two passes): kkt_solve_gva -4.6% on the reference row (147.7 -> 140.9 us), -2 to -4% on 397B-TP4
    1024x8; outputs bitwise equal. With "per_head" the same structure (the next head's factors waited for before
    that last barrier) was 1.5 to 5% slower at GVA 1-3, and with two heads of prefetch and the factor rows stored
    by the cumsum threads (kkt_barriers_ab2) -1% at GVA 2, +1 to +2% at GVA 1 and 3, so "per_head" keeps four.
    "once" with two barriers against "per_head" with four (kkt_barriers_ab3): -4% at GVA 2 (35B-TP1 8192x4 100.5 ->
    96.3 us, 35B-TP1 1024x8 33.0 -> 31.7), -0.4% at GVA 4, +0.5% at GVA 3, +8% at GVA 1, so the runtime now takes
    "once" at GVA 2 and 4. In every form no CTA barrier follows K's wait (each thread waits on K's mbarrier, which
    makes the tile visible to it), and with "per_head" the first head has none before its gate (no bulk store
    precedes it): H100, against the barriers in place, kkt_solve_gva -2.6 to -2.9% at GVA 2, -1.6 to -2.9% at GVA 3,
    within 0.5% at GVA 1 and 4, outputs bitwise equal (results/2026-11-27-h100-s39/kkt_syncs_ab).
    grid_order: the launch order of the CTAs. "heads": grid (H, S), key heads fastest, so the H CTAs of a chunk slot
    run together and their loads and stores cover contiguous memory (K's rows of all key heads, beta's and g's rows
    of all value heads, A~'s rows of all value heads: a 256-byte K row, a 4-byte beta a CTA otherwise, each in another
    DRAM page); "slots": grid (S, H), chunk slots fastest (the order before session 31, kept for more than 65535 chunk
    slots, CUDA's gridDim.y limit: ops.kkt_gva_order). Measured "heads" against "slots" (H100, timeline, two passes
    interleaved, results/2026-11-27-h100-s31/grid_order_final_ab): kkt_solve_gva -10% on the reference row (176.0 ->
    158.7 us) and on 397B-TP1 16384+16384, -15% on 397B-TP4 1024x8, -6.5% on 397B-TP2 8192x4, -5% on 27B-TP2 8192x4,
    -4.5% on 35B-TP1 8192x4, -3% on 2B-TP1 8192x4 and 1x32768, within +-1% on the other 1024x8 rows; outputs bitwise
    equal (every CTA computes what it did). On the H200, where this kernel is L1-bound rather than DRAM-bound at GVA
    4, less (results/2026-11-27-h200-s31/order_ab): -3% on the long GVA-4 rows (151.8 -> 147.2 us), -12% on 397B-TP4
    1024x8, -1% on the long GVA-2 rows, +1.5 to +3% on the 1024x8 rows at GVA 1-3; every span within +-0.8%."""
    K, C = head_dim_k, chunk_size
    two_barriers = factor_fetch == "once"
    assert stripe_l in ("ldsm", "lds") and gate in ("factors", "exp2") and factor_fetch in ("per_head", "once")
    assert C == CHUNK and threads == 2 * C and grid_order in ("slots", "heads")
    SUB = C // 4
    XS = diag_stride
    assert XS >= SUB and XS % 2 == 0
    num_tokens = T.dynamic("num_tokens")
    rows_len = T.dynamic("rows_len")
    num_k_heads = T.dynamic("num_k_heads")
    num_v_heads = T.dynamic("num_v_heads")
    num_slots = T.dynamic("num_slots")

    def f16_pair(frag, r, c):
        """Elements (r, c), (r, c + 1) of an fp32 fragment rounded to fp16 (to nearest) and packed into 32 bits."""
        return T.call_extern("uint32", "__pack_half2", T.cast(frag[r, c], "float16"), T.cast(frag[r, c + 1], "float16"))

    @T.macro
    def store_s_f16(kk_f, lh, tx):
        """Warp I = tx / 32 (1..3): S's blocks (I, J), J < I, from K K^T's accumulator (rows 16 I + lane / 4, + 8;
        column pairs 8 q + 2 (lane % 4): the mma fragment of the block's four 8 x 8 matrices) to the fp16 copy
        (`sh_at`), one stmatrix.x4 a block; lane l addresses row l % 8 of matrix l / 8 = 2 q + h (h the row half)."""
        lane = tx % 32
        ct = 2 * (lane % 4)
        for I in (1, 2, 3):
            if tx // 32 == I:
                rr = SUB * I + lane // 4
                for J in (0, 1, 2):  # a Python tuple: J static, the fragment's registers fixed
                    if J < I:
                        T.call_extern("handle", "tl::ptx_stmatrix_x4",
                                      T.address_of(lh[SUB * I + 8 * ((lane // 8) % 2) + lane % 8,
                                                      SUB * J + 8 * (lane // 16) + sh_offset(I)]),
                                      f16_pair(kk_f, rr, SUB * J + ct), f16_pair(kk_f, rr + 8, SUB * J + ct),
                                      f16_pair(kk_f, rr, SUB * J + 8 + ct), f16_pair(kk_f, rr + 8, SUB * J + 8 + ct))

    @T.macro
    def chunk_cumsum(g_h, gc_h, i, sc):
        """Threads i = 0..63 (two warps): the chunk cumsum of g_h (inclusive) into gc_h in log2 units: both warps
        scan the halves g[0:32] and g[32:64] by shuffles (sc[0], sc[1]: the running sums; sc[2], sc[3]: the
        shuffled terms), the upper half adds the lower half's total."""
        lane = i % 32
        sc[0] = at(g_h, lane)
        sc[1] = at(g_h, 32 + lane)
        scan_chunk_halves(sc, lane)
        gc_h[i] = T.if_then_else(i < 32, sc[0], sc[1] + sc[2]) * LOG2E

    @T.macro
    def fetch_head_factors(beta, g, fac_s, p, t, hv, i):
        """factor_fetch "per_head". Thread i: token t's beta and g of head hv into fac_s[p, 0, i], fac_s[p, 1, i]
        by cp.async (no registers; the caller commits the group). Values of tokens past the sequence's end are never
        used: L's rows past it are masked in S, the gate of a stored row reads G of its own and earlier tokens only,
        and the factor rows past it are written as zeros."""
        T.ptx_cp_async(T.access_ptr(fac_s[p, 0, i], "w"), T.access_ptr(beta[t, hv], "r"), 1)
        T.ptx_cp_async(T.access_ptr(fac_s[p, 1, i], "w"), T.access_ptr(g[t, hv], "r"), 1)

    @T.macro
    def fetch_factors(beta, g, raw_s, t, hv0, i, gva):
        """factor_fetch "once". Thread i: token t's beta and g of the key head's gva value heads hv0 .. hv0 + gva - 1
        (contiguous in beta[t] and g[t]) into raw_s[0, i, 0:gva], raw_s[1, i, 0:gva] by cp.async, one 16-byte copy a
        tensor at GVA 4, one 8-byte copy at GVA 2 (the runtime passes beta and g 16-byte aligned, and HV = H gva keeps
        every row's start aligned so), a 4-byte copy a head otherwise; the caller commits the group. Values of tokens
        past the sequence's end are never used: L's rows past it are masked in S, the gate of a stored row reads G
        of its own and earlier tokens only, and the factor rows past it are written as zeros."""
        if gva == 4:
            T.ptx_cp_async(T.access_ptr(raw_s[0, i, 0], "w"), T.access_ptr(beta[t, hv0], "r"), 4)
            T.ptx_cp_async(T.access_ptr(raw_s[1, i, 0], "w"), T.access_ptr(g[t, hv0], "r"), 4)
        elif gva == 2:
            T.ptx_cp_async(T.access_ptr(raw_s[0, i, 0], "w"), T.access_ptr(beta[t, hv0], "r"), 2)
            T.ptx_cp_async(T.access_ptr(raw_s[1, i, 0], "w"), T.access_ptr(g[t, hv0], "r"), 2)
        else:
            for e in T.serial(gva):
                T.ptx_cp_async(T.access_ptr(raw_s[0, i, e], "w"), T.access_ptr(beta[t, hv0 + e], "r"), 1)
                T.ptx_cp_async(T.access_ptr(raw_s[1, i, e], "w"), T.access_ptr(g[t, hv0 + e], "r"), 1)

    @T.macro
    def spread_factors(raw_s, l_s, i, gva):
        """Thread i, after its own copies of `fetch_factors` have landed: its token's factors from raw_s (token-major)
        to l_s at `fac_at` (head-major, what the head loop reads without bank conflicts); entries past gva are not
        written."""
        for e in T.unroll(MAX_GVA):
            if e < gva:
                for b in (0, 1):
                    l_s[fac_at(e, b, i)] = raw_s[b, i, e]

    @T.macro
    def head_tail(l_s, sh, x_h, beta_h, gc_h, rn_s, ao_s, a, rows, xo, tt, xa, th, bq, b8, bf, g_b, col_g, ob_s,
                  factors, r_f, hv, t0, t_end, r0, tx, whole, hr):
        """One head after its diagonal inverses (x_h) and cumsum (gc_h): the row stripes, the gated epilogue into
        ao_s, A~'s store and the head's factor rows. With `two_barriers` (see the program's docstring) the caller
        has waited for the previous head's bulk store before the barrier that published x_h and gc_h, and the factor
        rows go before the barrier that ends the head, so that every read of x_h and gc_h precedes it; otherwise the
        previous head's bulk store is waited for here, behind a barrier of its own (not for the first head, hr = 0,
        which has no previous store)."""
        if stripe_l == "ldsm":
            solve_row_stripes_f16_ldsm(sh, x_h, xo, tt, xa, th, bq, bf, b8, tx, beta_h)
        else:
            solve_row_stripes_f16(l_s, x_h, xo, tt, xa, th, bq, bf, tx, True, beta_h)
        if not two_barriers:
            if hr > 0:
                T.tma_store_wait()  # the previous head's bulk store has read ao_s
                T.sync_threads()
        gate_row_stripe(x_h, xo, gc_h, ao_s, g_b, col_g, ob_s, tx, dtype, True, factors, r_f)
        if two_barriers:
            store_factor_rows(rows, hv, r0, t0, t_end, gc_h, beta_h, rn_s, use_l2norm)
        T.fence_proxy_async()
        T.sync_threads()
        store_a_lower(ao_s, a, t0, t_end, hv, whole)  # a_tile.py
        if not two_barriers:
            store_factor_rows(rows, hv, r0, t0, t_end, gc_h, beta_h, rn_s, use_l2norm)

    @T.prim_func
    def kkt_solve_gva(
        k: T.Tensor((num_tokens, num_k_heads, K), dtype),
        beta: T.Tensor((num_tokens, num_v_heads), "float32"),
        g: T.Tensor((num_tokens, num_v_heads), "float32"),
        chunk_table: T.Tensor((num_slots, 3), "int32"),
        a: T.Tensor((num_tokens, num_v_heads, C), dtype),
        rows: T.Tensor((factor_rows(use_l2norm), num_v_heads, rows_len), "float32"),
        gva: T.int32,
    ):
        with (T.Kernel(num_slots, num_k_heads, threads=threads) if grid_order == "slots" else
              T.Kernel(num_k_heads, num_slots, threads=threads)) as bids:
            cid, hk = bids if grid_order == "slots" else bids[::-1]
            T.annotate_min_blocks_per_sm(min_blocks_per_sm)
            l_s = T.alloc_shared((C, C), "float32")  # K's tile, then S (K is dead once K K^T is in registers)
            k_v = T.view(l_s, (C, K), dtype)
            ao_s = T.alloc_shared((C, C), dtype)  # a head's gated inverse before its store
            T.annotate_layout({ao_s: a_tile_layout(ao_s)})
            x_s = T.alloc_shared((C, XS), "float32")
            lh = T.view(l_s, (C, 2 * C), "float16")  # l_s's rows as halves: the fp16 copy of S (`sh_at`)
            sh = sh_at(lh)
            if factor_fetch == "once":
                # every head's beta and g, loaded once in the prologue by one copy a token and tensor into raw_s
                # (token-major, as in global memory; x_s's space, unused until the first head's substitution) and
                # spread by their loading threads into l_s's free part (`fac_at`): no shared memory of their own, so
                # 5 CTAs an SM still fit the 164 KiB carveout (two more tiles of 2.5 KB did not)
                assert (C * XS) % (C * MAX_GVA) == 0
                raw_s = T.view(x_s, ((C * XS) // (C * MAX_GVA), C, MAX_GVA), "float32")
                fac_s = None
            else:
                # beta (fac_s[p, 0]) and g (fac_s[p, 1]) of head hr in slot p = hr % 3: the next head's arrive by
                # cp.async during this one's solve (through registers, ptxas spilled them and the prefetch waited for
                # its loads at once); three slots, so that the prefetch never writes the slot that the head before,
                # still in its epilogue on other warps, reads (no CTA barrier at a head's start)
                fac_s = T.alloc_shared((3, 2, C), "float32")
            gc_s = T.alloc_shared((C,), "float32")
            rn_s = T.alloc_shared((C,), "float32")
            # the row (per column block) and column factors of the blocks below the diagonal, inside l_s
            factors = (l_s, rf_at, cf_at) if gate == "factors" else None
            gf = T.alloc_local((4,), "float32")
            r_f = T.alloc_local((2,), "float32")
            sc = T.alloc_local((4,), "float32")  # the cumsum's running sums and shuffled terms
            kk_f = T.alloc_fragment((C, C), "float32")
            if stripe_l == "ldsm":  # the wgmma accumulator's layout, stated for `store_s_f16`'s hand-made access
                T.annotate_layout({kk_f: accumulator_layout(C, C)})
            rb_f = T.alloc_fragment((C,), "float32")
            cn_f = T.alloc_fragment((C,), "float32")
            xo = T.alloc_local((XO_REGS,), "float32")
            tt = T.alloc_local((8,), "float32")
            xa = T.alloc_local((8 * 4,), "float16")
            th = T.alloc_local((8,), "float16")
            bq = T.alloc_local((4,), "float16")
            b8 = T.alloc_local((8,), "float16")
            bf = T.alloc_local((8,), "float32")
            col = T.alloc_local((SUB,), "float32")
            cb = T.alloc_local((SUB,), "float32")
            g_b = T.alloc_local((2,), "float32")
            col_g = T.alloc_local((2,), "float32")
            ob_s = T.alloc_local((CHUNK // 4 * 2,), dtype)
            k_ready = T.alloc_barrier(arrive_count=[32])
            if pdl:
                T.pdl_sync()
                T.pdl_trigger()
            t0 = chunk_table[cid, 0]
            t_end = chunk_table[cid, 1]
            r0 = chunk_table[cid, 2]
            whole = T.alloc_var("int32")  # 1: a sequence's first chunk, whose A~ is stored whole (a_tile.py)
            whole = T.if_then_else(first_chunk_of_sequence(chunk_table, cid, t0), 1, 0)
            tx = T.get_thread_binding()
            ti = tx % C  # the token whose factors this thread loads (threads < C)

            # ("once" holds at most MAX_GVA heads' factors; the runtime takes it at GVA 2 and 4)
            if (t0 < t_end) & ((gva <= MAX_GVA) if factor_fetch == "once" else True):
                if tx < 32:
                    T.tma_copy(k[t0:t0 + C, hk, :], k_v[0:C, :], barrier=k_ready[0])
                    T.barrier_arrive(k_ready[0])
                if factor_fetch == "once":
                    if tx < C:  # every head's beta and g (a token past the tensor's end reads its last token's)
                        fetch_factors(beta, g, raw_s, T.min(t0 + ti, num_tokens - 1), hk * gva, ti, gva)
                        T.ptx_commit_group()
                else:
                    if tx < C:  # the first head's beta and g (a token past the tensor's end reads its last token's)
                        fetch_head_factors(beta, g, fac_s, 0, T.min(t0 + ti, num_tokens - 1), hk * gva, ti)
                    T.ptx_commit_group()
                T.barrier_wait(k_ready[0], 0)  # every thread waits, so K is visible to each (no CTA barrier)
                T.gemm(k_v[0:C, :], k_v[0:C, :], kk_f, transpose_B=True, clear_accum=True)
                if use_l2norm:  # ||k_i||^2 is the diagonal
                    store_key_norms(kk_f, rn_s, tx)
                    T.sync_threads()  # rn_s written by the diagonal's owners, read by all
                    for i in T.Parallel(C):
                        rb_f[i] = rn_s[i]
                    for j in T.Parallel(C):
                        cn_f[j] = rn_s[j]
                    for i, j in T.Parallel(C, C):
                        kk_f[i, j] = T.if_then_else((j < i) & (t0 + i < t_end), kk_f[i, j] * rb_f[i] * cn_f[j], 0.0)
                else:
                    for i, j in T.Parallel(C, C):
                        kk_f[i, j] = T.if_then_else((j < i) & (t0 + i < t_end), kk_f[i, j], 0.0)
                T.sync_threads()  # every warp's wgmma has read K before S overwrites it
                if stripe_l == "ldsm":  # the diagonal blocks in fp32 (the substitution), the ones below in fp16
                    for i, j in T.Parallel(C, C):
                        if j // SUB == i // SUB:
                            l_s[i, j] = kk_f[i, j]
                    store_s_f16(kk_f, lh, tx)
                else:
                    for i, j in T.Parallel(C, C):
                        if j // SUB <= i // SUB:
                            l_s[i, j] = kk_f[i, j]
                if factor_fetch == "once":
                    if tx < C:  # the factors have had K K^T and S's store to land
                        T.ptx_wait_group(0)
                        spread_factors(raw_s, l_s, ti, gva)
                    T.sync_threads()  # S and every head's factors visible (two_barriers: no barrier at a head's start)
                for hr in T.serial(gva):
                    if factor_fetch == "once":
                        par = hr % MAX_GVA  # = hr (hr < gva <= MAX_GVA); bounded, so fac_s's indices stay 32-bit
                    else:
                        par = hr % 3
                        if (tx < C) & (hr + 1 < gva):  # the next head's factors, in flight during this head
                            fetch_head_factors(beta, g, fac_s, (hr + 1) % 3, T.min(t0 + ti, num_tokens - 1),
                                               hk * gva + hr + 1, ti)
                        T.ptx_commit_group()  # (an empty group when there is none: one group a head)
                        T.ptx_wait_group(1)  # this head's group, committed a head earlier, has landed
                    if not two_barriers:
                        T.sync_threads()  # the previous head's readers of gc_s and x_s are done (and, on the first
                        # head, S is visible)
                    if factor_fetch == "once":  # this head's beta and g (accessors, chunk_inverse.at)
                        beta_h = fac_row(l_s, par, 0)
                        g_h = fac_row(l_s, par, 1)
                    else:
                        beta_h = row_of(fac_s, par, 0)
                        g_h = row_of(fac_s, par, 1)
                    if tx < C:
                        diag_block_inverse(l_s, col, ti, beta_h, cb)
                        store_diag_block(x_s, col, ti, True)
                    else:  # meanwhile the other 64 threads form the chunk cumsum of g
                        chunk_cumsum(g_h, gc_s, ti, sc)
                        if gate == "factors":
                            block_gate_factors(sc[0], sc[1], sc[2], l_s, rf_at, cf_at, ti, gf)
                    if two_barriers:
                        T.tma_store_wait()  # the previous head's bulk store has read ao_s (its issuing thread)
                    T.sync_threads()
                    head_tail(l_s, sh, x_s, beta_h, gc_s, rn_s, ao_s, a, rows, xo, tt, xa, th, bq, b8, bf, g_b,
                              col_g, ob_s, factors, r_f, hk * gva + hr, t0, t_end, r0, tx, whole == 1, hr)
                T.tma_store_wait()

    return kkt_solve_gva
