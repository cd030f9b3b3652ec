"""Chunk inverse, gated: A~ = (I + strict_lower(K K^T diag(beta)))^-1 (.) Gamma, per chunk and value head,
with the chunk-local cumsum of g and the other per-token factors that the fused kernel needs.
(The runtime runs kkt_solve_gva.py instead, at every GVA ratio: the same outputs from one CTA per chunk and key
head, its value heads sharing K's load and K K^T. This program serves the rows-only pass, and its merges stay built
as A/B baselines.)

Inputs (tokens of every sequence packed along one axis, T = total tokens):
    k            [T, H, K]   bf16/fp16, key head of value head hv is hv // (HV // H)
    beta         [T, HV]     fp32
    g            [T, HV]     fp32 per-token log decay (<= 0)
    chunk_table  [S, 3]      int32, per chunk slot (t0, t_end, r0): its first token, its sequence's end and
                             the row of `rows` that holds t0's factors (zeros for the slots past the last
                             chunk); S = T // C + N + 1, the grid
    gva                      int32, HV // H (value heads a key head serves)
Outputs:
    a            [T, HV, C]  bf16/fp16: row r of the chunk holding token t stored at a[t, hv, :], the 16 x 16
                             blocks on or below the diagonal only (a_tile.py; with a_store "tma")
    rows         [R, HV, R_len] fp32 per-token factor rows (R = `factor_rows(use_l2norm)`: 2, or 3 with the norm),
                             token-contiguous so that chunk_fwd loads a chunk's rows by one TMA box: sequence n's
                             tokens from row round_up(cu_seqlens[n], 4) + C n (a box must start 16-byte aligned),
                             and the rows after a sequence's last token up to its chunk's end written as zeros:
                  rows[0]    G log2(e), the cumsum of g from the start of the token's chunk in log2 units (every
                             consumer exponentiates it by exp2)
                  rows[1]    beta_t, the column factor of Vn'^T in O (see below)
                  rows[2]    rk = 1 / ||k_t|| (use_l2norm only)
                             chunk_fwd forms the two derived factors of its state chain from these on chip (the idle
                             warps of its producer warpgroup, `derive_factors`): wf = exp(G_t) rk_t (the column factor
                             of S^T K^T in W^T) and uf = exp(G_last - G_t) rk_t beta_t (G_last: the chunk's last
                             token's G; the column factor of Vn'^T in the state update). Until session 28 kkt_solve
                             stored those too (five rows: 24 bytes a value-head token more through HBM).

A~ carries no beta (v13b): the delta rule's A = (I + strict_lower(diag(beta) K K^T))^-1 diag(beta) equals
diag(beta) (I + strict_lower(K K^T diag(beta)))^-1 (push-through), so with Y the latter inverse the fused kernel
forms Vn' = (Y (.) Gamma) W, and beta enters where a factor is applied anyway: the state update's column factor
(uf beta) and O's operand Vn = Vn' diag(beta) (formed while the state update runs, off the state's chain).
A~'s diagonal is exactly 1, and its one rounding to bf16 no longer perturbs the largest term of the product.
With A~ = (A (.) Gamma) (v0-v12) the errors against float64 were 13% (o) and 20% (final state) higher on the
accuracy benchmark's inputs, at ~2% more GPU time now (H200; a float64 emulation of every rounding found it
first: results/2026-11-24-h200-s14/beta_on_w_ab, accuracy_cost_ab).
The inverse is gate-free (the gate enters only its epilogue): inverting the gated matrix equals
D (I+L)^-1 D^-1 with D = diag(exp G), i.e. the gate-free inverse multiplied elementwise by
Gamma_rs = exp(G_r - G_s) (r >= s, exponent <= 0), which the epilogue applies before the one rounding to
bf16/fp16. With use_l2norm, L is built from normalised keys without a pass over HBM: ||k_r||^2 is the
diagonal of K K^T. Rows past the end of a sequence get beta = 0 and g = 0 and their rows of L are masked, so
they solve to identity rows and zero columns and are never stored (a chunk never writes into its neighbour's rows).

Tile plan: one CTA of `threads` threads per (chunk slot, value head), on a grid (S, gva, H) so that the value
head hv = hk gva + r needs no division, and the slot's tokens come from one table load (the runtime caches the
table per cu_seqlens; a search of chunk_offsets was ~9% of the kernel's warp samples, the head division ~4%).
K chunk [C, K] arrives in shared memory by one TMA copy (k_load "tma"; "ldg": staged through registers), in
a tile that shares its space with L's (K is dead once K K^T is in registers), K K^T is one
wgmma (C x C x K) into fp32 registers, the masked L goes to shared memory in fp32 (only its 16 x 16 blocks on
or below the diagonal: the upper 3/8 are never written nor read), and the unit lower
triangular inverse is built blockwise in fp32: the four 16 x 16 diagonal blocks by forward substitution
(one thread per column, in registers; meanwhile the other 64 threads form the chunk cumsum of g by warp shuffles),
then the blocks below the diagonal: "mma" (the default, v12): each warp owns a row stripe of 16 rows and
forms its blocks right to left from X L = I, X_IJ = -(sum_K X_IK L_KJ) X_JJ, by warp-level tf32 mma.sync with
hi/lo split operands (3xTF32, about fp32 accuracy), its own earlier blocks in registers and L, X_JJ from shared
memory, so no warp waits for another inside the recurrence and no merge temporaries are needed; or two merge levels
(16 -> 32 -> 64) that each form X21 = -X22 (L21 X11) ("regs": register-tiled on the CUDA cores; "tc": the
32 -> 64 level as tf32 tensor-core products). The merges ("regs", "tc") read the 16 x 16 and 32 x 32
diagonal blocks of x_s whole (the two upper-right quarters of the 32 x 32 blocks are zeroed for them); their
epilogue loads above the diagonal too but masks j > i to zero. With "mma" each warp gates its row stripe straight
from its registers (`gate_row_stripe`, v17a: the blocks below the diagonal never go through x_s). The epilogue
stages its bf16 rows in K's (dead) tile, laid out by a_tile.py's column blocks, from which a full chunk's
blocks on or below the diagonal leave by four TMA stores (a_store "tma"; a partial chunk by masked 16-byte row
stores).
The merges' temporary lives in x_s's unused upper-right 32 x 32 block. Shared memory: 33.5 KB + 1 KB static (the
mbarrier) a CTA, 80 registers: 6 CTAs an SM; "mma" keeps only the four diagonal inverses in x_s (23.3 KB + 1 KB) and
runs 7 CTAs an SM at 72 registers without the in-kernel norm (`min_blocks_per_sm`). The grid is
sized from shapes alone (T // C + N + 1 chunk slots): no host synchronisation is needed to launch it.
"""


import tilelang
import tilelang.language as T

from .a_tile import a_tile_layout, first_chunk_of_sequence, store_a_lower
from .chunk_inverse import (CHUNK, LOG2E, XO_REGS, at, diag_block_inverse, gate_row_stripe, gate_rows,
                            solve_row_stripes, solve_row_stripes_f16, store_diag_block)

L2NORM_EPS = 1e-6
ROW_G, ROW_BETA, ROW_RK = 0, 1, 2  # the per-token factor rows of `rows` (rk with use_l2norm only)


def factor_rows(use_l2norm: bool) -> int:
    """How many factor rows kkt_solve writes (G, beta, and 1/||k|| with the in-kernel norm); chunk_fwd loads them by
    one TMA box a chunk."""
    return 3 if use_l2norm else 2


@T.macro
def store_key_norms(kk_f, rn_s, tx):
    """rn_s[i] = 1 / ||k_i|| from the diagonal of K K^T (kk_f, the wgmma accumulator of 128 threads): one branch a
    warp, so that the block tests fold to constants and 4 of a thread's 32 registers remain candidates (one test over
    all 32 was ~15% of kkt_solve's instructions)."""
    C = CHUNK
    SUB = C // 4
    for w in (0, 1, 2, 3):  # a Python loop: w is a constant in each branch
        if tx // 32 == w:
            for i, j in T.Parallel(C, C):
                if (i // SUB == w) & (j // 8 == i // 8) & (i == j):
                    rn_s[i] = T.rsqrt(kk_f[i, j] + L2NORM_EPS)


@T.macro
def store_factor_rows(rows, hv, r0, t0, t_end, gc, beta_h, rn_s, use_l2norm):
    """A chunk's factor rows of head hv (see the module docstring) from its cumsum gc (log2 units), beta_h (a
    buffer or an accessor, chunk_inverse.at) and, with use_l2norm, rn_s; the rows past the sequence's end up to the
    chunk's end as zeros."""
    for i in T.Parallel(CHUNK):
        if t0 + i < t_end:
            rows[ROW_G, hv, r0 + i] = gc[i]
            rows[ROW_BETA, hv, r0 + i] = at(beta_h, i)
            if use_l2norm:
                rows[ROW_RK, hv, r0 + i] = rn_s[i]
        else:
            for f in T.unroll(factor_rows(use_l2norm)):
                rows[f, hv, r0 + i] = 0.0


def kkt_solve_program(dtype: str = "bfloat16", use_l2norm: bool = False, merge: str = "regs",
                      head_dim_k: int = 128, chunk_size: int = 64, threads: int = 128,
                      epilogue_batch: int = 8, min_blocks_per_sm: int | None = None, k_load: str = "tma",
                      a_store: str = "tma", pdl: bool = True, solve: bool = True, tf32x3: bool = False,
                      diag_stride: int = 24):
    """merge: "regs" (register-tiled block products), "tc"
    (16 -> 32 register-tiled, 32 -> 64 as two tf32 tensor-core products, v3), "mma" (v12: every block
    below the diagonal by warp-level tf32 mma.sync in registers, see `solve_row_stripe` and tf32x3) or "mma16"
    (the same recurrence on fp16 m16n8k16 tiles, `solve_row_stripe_f16`: errors unchanged, kkt_solve -1.5% on H200).
    min_blocks_per_sm: CTAs an SM must be able to hold (the launch bound caps registers at
    65536 / (threads x it); shared memory, 33.5 KB + 1 KB static a CTA, allows 6; "mma" with its diagonal-only x_s,
    23.3 KB + 1 KB, allows 9). Default 6, and 7 (72 registers) for "mma" without the in-kernel norm: measured on
    H200 (results/2026-11-24-h200-s17/v17c_ab) kkt_solve -7% on the GVA-3 rows, -0 to -3% on the others, +1.4% on
    397B-TP1 1024x8; 8 (64 registers, 24 bytes spilled) gained less (-1 to -3%). With the norm, 72 registers spill
    32 bytes (ptxas), unmeasured, so it keeps 6.
    epilogue_batch: rows a thread loads from shared memory (a column pair each) before gating any of them
    (the loads of a batch are in flight together; each batch costs one shared-memory latency).
    k_load: how K's chunk reaches shared memory: "tma" (one bulk tensor copy on an mbarrier, issued by the
    first warp while every thread loads beta and g; rows past the tensor's end arrive as zeros) or "ldg"
    (16-byte loads through registers, each with its 64-bit address and bounds test).
    a_store: how a full chunk's A~ leaves: "tma" (one bulk tensor store from the staging tile, waited for
    before the CTA exits) or "ldg" (16-byte row stores through registers, as a partial chunk always does).
    pdl: programmatic dependent launch (every TileLang launch allows it): each CTA first waits for the grid
    before it on the stream (griddepcontrol.wait: its inputs are complete and visible), then lets the next grid
    (chunk_fwd) launch early (griddepcontrol.launch_dependents), so that grid's CTAs start on SMs as this one's
    drain and run their prologue (barriers, setmaxnreg, h0) while its last CTAs finish; the trigger comes after
    the wait, so a launched dependent knows every grid before this one has completed.
    tf32x3: merge "mma"'s block products in 3xTF32 (~fp32) or, False, 1xTF32 (rounded to nearest; shorter chains).
    diag_stride: merge "mma" keeps in x_s only the four 16 x 16 diagonal inverses (the blocks below the diagonal
    stay in registers since v17a), each in its own 16 rows with block-local columns, rows diag_stride floats apart
    (24: the fragment loads and the epilogue's pairs conflict no more than at the full tile's 72, and 8-byte
    aligned): 6 KB instead of 18 KB.
    solve: False makes the rows-only pass of chunk_fwd's fused variant (which forms the inverse itself): no L,
    no inverse, `a` neither read nor written (any valid pointer may be passed); K is loaded only with use_l2norm
    (its norms are the diagonal of K K^T, formed as in the full pass, so the rows are bitwise the same)."""
    assert k_load in ("tma", "ldg") and merge in ("regs", "tc", "mma", "mma16") and a_store in ("tma", "ldg")
    stripes = merge in ("mma", "mma16")  # row stripes in registers (tf32 m16n8k8 or fp16 m16n8k16 block products)
    K, C = head_dim_k, chunk_size
    assert C == CHUNK
    SUB = C // 4  # diagonal block size of the blocked inverse
    # the merges' temporary T = L21 X11 lives in x_s's upper-right 2SUB x 2SUB block (columns TC0..C of rows
    # 0..2SUB), which the inverse never uses (the epilogue reads it but masks j > i), instead of a 4 KB tile
    # of its own: the TMA variant's mbarrier costs 1 KB of static shared memory, and 6 CTAs an SM need the room
    TC0 = 2 * SUB
    assert threads == 128 and C == 64, "the register-tiled merge maps exactly 128 threads onto 64 x 64"
    rows_per_warp = C // (threads // 32)  # epilogue rows of a warp (each lane a column pair)
    assert rows_per_warp % epilogue_batch == 0 and C == 2 * 32

    @T.macro
    def merge_level_regs(l_s, x_s, acc, tx, bs):
        """One merge level: the inverse of each 2bs x 2bs diagonal block from its two bs x bs diagonal
        inverses, X21 = -X22 (L21 X11) (the temporary L21 X11 in x_s's unused upper-right block),
        register-tiled: each thread owns an RB x CB tile of the result, so each step over kk loads RB + CB
        values for RB * CB FMAs (shared-memory loads were the limit)."""
        RB = 2
        CB = 4 if bs == 32 else 2
        per_row = bs // CB
        tpb = (bs // RB) * per_row  # threads per diagonal block: 64 (bs=16, 2 blocks) or 128 (bs=32)
        p = tx // tpb
        r0 = ((tx % tpb) // per_row) * RB
        c0 = ((tx % tpb) % per_row) * CB
        o = 2 * bs * p
        for a_, b_ in T.grid(RB, CB):
            acc[a_, b_] = 0.0
        for kk in T.serial(bs):
            for a_, b_ in T.grid(RB, CB):
                acc[a_, b_] += l_s[o + bs + r0 + a_, o + kk] * x_s[o + kk, o + c0 + b_]
        for a_, b_ in T.grid(RB, CB):
            x_s[p * bs + r0 + a_, TC0 + c0 + b_] = acc[a_, b_]
        T.sync_threads()
        for a_, b_ in T.grid(RB, CB):
            acc[a_, b_] = 0.0
        for kk in T.serial(bs):
            for a_, b_ in T.grid(RB, CB):
                acc[a_, b_] -= x_s[o + bs + r0 + a_, o + bs + kk] * x_s[p * bs + kk, TC0 + c0 + b_]
        for a_, b_ in T.grid(RB, CB):
            x_s[o + bs + r0 + a_, o + c0 + b_] = acc[a_, b_]
        T.sync_threads()

    # merge "mma": x_s holds the four diagonal inverses only, rows XS = diag_stride floats apart (see diag_stride);
    # "regs" / "tc": the whole C x C tile (their merges read the 32 x 32 diagonal blocks whole). L keeps the layout
    # of the K tile that shares its space.
    if min_blocks_per_sm is None:
        min_blocks_per_sm = 7 if stripes and not use_l2norm else 6
    XS = diag_stride if stripes else C
    assert not stripes or (diag_stride >= SUB and diag_stride % 2 == 0)
    assert not stripes or SUB == 16, "a row stripe is one m16 mma tile high"
    num_tokens = T.dynamic("num_tokens")
    rows_len = T.dynamic("rows_len")
    num_k_heads = T.dynamic("num_k_heads")
    num_v_heads = T.dynamic("num_v_heads")
    num_slots = T.dynamic("num_slots")

    @T.prim_func
    def kkt_solve(
        k: T.Tensor((num_tokens, num_k_heads, K), dtype),
        beta: T.Tensor((num_tokens, num_v_heads), "float32"),
        g: T.Tensor((num_tokens, num_v_heads), "float32"),
        chunk_table: T.Tensor((num_slots, 3), "int32"),
        a: T.Tensor((num_tokens, num_v_heads, C), dtype),
        rows: T.Tensor((factor_rows(use_l2norm), num_v_heads, rows_len), "float32"),
        gva: T.int32,
    ):
        with T.Kernel(num_slots, gva, num_k_heads, threads=threads) as (cid, hr, hk):
            T.annotate_min_blocks_per_sm(min_blocks_per_sm)
            l_s = T.alloc_shared((C, C), "float32")
            # K's tile and the epilogue's output tile share l_s's 16 KB by hand: K is dead once K K^T is in
            # registers (before L is stored), L once the merges are done (before the epilogue). TileLang's
            # planner cannot see those lifetimes once the kernel holds an mbarrier (it keeps every buffer
            # live throughout: 62 KB a CTA, 3 CTAs an SM, instead of 37 KB and 6)
            k_v = T.view(l_s, (C, K), dtype)
            # the gated inverse, written once L is dead: columns [0, C) of the K tile's view. TileLang gives the
            # views of one buffer one layout, so the K tile takes a_tile's (SUB-column blocks, 32-byte swizzle;
            # K arrives by 8 boxes of 32-byte rows), whose first four column blocks are A~'s tile
            ao_s = k_v
            if solve:
                T.annotate_layout({k_v: a_tile_layout(k_v)})
            beta_s = T.alloc_shared((C,), "float32")
            rn_s = T.alloc_shared((C,), "float32")
            g_s = T.alloc_shared((C,), "float32")
            gc_s = T.alloc_shared((C,), "float32")
            sa = T.alloc_var("float32")  # the cumsum's two halves' running sums and their shuffled terms
            sb = T.alloc_var("float32")
            ta = T.alloc_var("float32")
            tb = T.alloc_var("float32")
            kk_f = T.alloc_fragment((C, C), "float32")
            rb_f = T.alloc_fragment((C,), "float32")  # L's row factor 1/||k_i|| (use_l2norm), by row
            cn_f = T.alloc_fragment((C,), "float32")  # L's column factor beta_j (times 1/||k_j||), by column
            x_s = T.alloc_shared((C, XS), "float32")
            if stripes:
                xo = T.alloc_local((XO_REGS,), "float32")
                tt = T.alloc_local((8,), "float32")
                a_f = T.alloc_local((4,), "float32")
                b_f = T.alloc_local((2,), "float32")
                ah = T.alloc_local((4,), "uint32")
                al = T.alloc_local((4,), "uint32")
                bh = T.alloc_local((2,), "uint32")
                bl = T.alloc_local((2,), "uint32")
                xa = T.alloc_local((8 * 4,), "float16")  # "mma16": the A fragments of the stripe's blocks
                th = T.alloc_local((8,), "float16")
                bq = T.alloc_local((4,), "float16")
                bf = T.alloc_local((8,), "float32")  # fp32 operands before their conversion
            col = T.alloc_local((SUB,), "float32")
            x_b = T.alloc_local((2 * epilogue_batch,), "float32")
            g_b = T.alloc_local((epilogue_batch,), "float32")
            o_b = T.alloc_local((2,), dtype)
            col_g = T.alloc_local((2,), "float32")
            ob_s = T.alloc_local((CHUNK // 4 * 2,), dtype) if stripes else None  # a warp's stripe, gated
            acc_r = T.alloc_local((2, 4), "float32")
            m_f = T.alloc_fragment((2 * SUB, 2 * SUB), "float32")
            if k_load == "tma":
                k_ready = T.alloc_barrier(arrive_count=[32])
            hv = T.alloc_var("int32")  # int32 index math (a 64-bit product would be inlined into every index)
            hv = hk * gva + hr
            if pdl:  # before the first global read (the chunk table)
                T.pdl_sync()
                T.pdl_trigger()
            t0 = chunk_table[cid, 0]
            t_end = chunk_table[cid, 1]
            r0 = chunk_table[cid, 2]
            whole = T.alloc_var("int32")  # 1: a sequence's first chunk, whose A~ is stored whole (a_tile.py)
            whole = T.if_then_else(first_chunk_of_sequence(chunk_table, cid, t0), 1, 0)
            tx = T.get_thread_binding()

            if t0 < t_end:
                if solve or use_l2norm:  # K: for L, or only for the norms 1/||k|| (rows-only)
                    if k_load == "tma":
                        # rows past the tensor's end arrive as zeros, rows of the next sequence are finite: both
                        # get beta = 0 and masked rows of L below, so they solve to identity rows, never stored
                        if tx < 32:
                            T.tma_copy(k[t0:t0 + C, hk, :], k_v[0:C, :], barrier=k_ready[0])
                            T.barrier_arrive(k_ready[0])
                    else:
                        T.copy(k[t0:t0 + C, hk, :], k_v[0:C, :])
                for i in T.Parallel(C):
                    beta_s[i] = T.if_then_else(t0 + i < t_end, beta[t0 + i, hv], 0.0)
                    g_s[i] = T.if_then_else(t0 + i < t_end, g[t0 + i, hv], 0.0)
                if solve or use_l2norm:
                    if k_load == "tma":
                        T.barrier_wait(k_ready[0], 0)
                    T.gemm(k_v[0:C, :], k_v[0:C, :], kk_f, transpose_B=True, clear_accum=True)
                if use_l2norm:  # ||k_i||^2 is the diagonal: its owners write 1/||k_i|| (L is stored once)
                    store_key_norms(kk_f, rn_s, tx)
                if solve and use_l2norm:
                    # the row and column factors into registers once (per element they were 3 shared loads)
                    for i in T.Parallel(C):
                        rb_f[i] = rn_s[i]
                    for j in T.Parallel(C):  # a loop of its own: cn_f is laid out by column, rb_f by row
                        cn_f[j] = beta_s[j] * rn_s[j]
                    for i, j in T.Parallel(C, C):  # rows past the sequence's end masked: identity rows of X
                        kk_f[i, j] = T.if_then_else((j < i) & (t0 + i < t_end), kk_f[i, j] * rb_f[i] * cn_f[j], 0.0)
                elif solve:
                    for j in T.Parallel(C):
                        cn_f[j] = beta_s[j]
                    for i, j in T.Parallel(C, C):
                        kk_f[i, j] = T.if_then_else((j < i) & (t0 + i < t_end), kk_f[i, j] * cn_f[j], 0.0)
                if solve:
                    # only 16 x 16 blocks on or below the diagonal are ever read: the upper ones (3/8) are not stored
                    for i, j in T.Parallel(C, C):
                        if j // SUB <= i // SUB:
                            l_s[i, j] = kk_f[i, j]
                    # the 32 -> 64 merge reads the two 32 x 32 diagonal blocks whole: their upper-right 16 x 16
                    # quarters must be 0 (the substitution writes the 16 x 16 diagonal blocks whole, zeros above
                    # their diagonals; every other read is of the lower triangle)
                    if not stripes:  # "mma" reads no block above the diagonal
                        for i, j in T.Parallel(SUB, SUB):
                            x_s[i, SUB + j] = 0.0
                            x_s[2 * SUB + i, 3 * SUB + j] = 0.0
                # (1) the four diagonal 16 x 16 blocks: forward substitution, one thread per column
                if tx < C:
                    if solve:
                        diag_block_inverse(l_s, col, tx)
                        store_diag_block(x_s, col, tx, stripes)
                else:
                    # meanwhile warps 2 and 3 form the chunk cumsum of g by warp shuffles: both scan the two
                    # halves g[0:32] and g[32:64] (inclusive, lane l's sums of lanes <= l), and the upper
                    # half adds the lower half's total; stored in log2 units (G log2(e), rows[0])
                    lane = tx % 32
                    sa = g_s[lane]
                    sb = g_s[32 + lane]
                    for d in (1, 2, 4, 8, 16):
                        ta = T.shfl_up(sa, d)
                        tb = T.shfl_up(sb, d)
                        if lane >= d:
                            sa = sa + ta
                            sb = sb + tb
                    ta = T.shfl_sync(sa, 31)  # the lower half's total (every lane of both warps shuffles)
                    gc_s[tx - C] = T.if_then_else(tx < C + 32, sa, sb + ta) * LOG2E
                if solve:
                    # (2) 16 -> 32 and (3) 32 -> 64: X21 = -X22 (L21 X11), products in fp32 on the CUDA cores
                    if merge == "regs":
                        T.sync_threads()
                        merge_level_regs(l_s, x_s, acc_r, tx, SUB)
                        merge_level_regs(l_s, x_s, acc_r, tx, 2 * SUB)
                    elif merge == "tc":
                        T.sync_threads()
                        merge_level_regs(l_s, x_s, acc_r, tx, SUB)
                        # 32 -> 64 on the tensor cores (mma.sync, tf32 inputs, fp32 accumulation)
                        T.gemm(l_s[2 * SUB:C, 0:2 * SUB], x_s[0:2 * SUB, 0:2 * SUB], m_f, clear_accum=True)
                        # T stored transposed, so that the second product reads its B operand K-contiguous
                        # (ldmatrix) instead of by 2-way bank-conflicted scalar loads
                        for i, j in T.Parallel(2 * SUB, 2 * SUB):
                            x_s[j, TC0 + i] = m_f[i, j]
                        T.gemm(x_s[2 * SUB:C, 2 * SUB:C], x_s[0:2 * SUB, TC0:C], m_f, transpose_B=True, clear_accum=True)
                        for i, j in T.Parallel(2 * SUB, 2 * SUB):
                            x_s[2 * SUB + i, j] = -m_f[i, j]
                    elif merge == "mma":
                        T.sync_threads()  # the diagonal inverses (x_s) and L (l_s) are read across warps
                        # the blocks below the diagonal stay in registers (xo) until the epilogue
                        solve_row_stripes(l_s, x_s, xo, tt, a_f, b_f, ah, al, bh, bl, tx, tf32x3, True)
                    elif merge == "mma16":
                        T.sync_threads()
                        solve_row_stripes_f16(l_s, x_s, xo, tt, xa, th, bq, bf, tx, True)
                # gc_s (written by threads C..2C-1 during the substitution) is read by all below, and with "mma"
                # every warp's reads of L are done before the epilogue writes ao_s over L's tile
                T.sync_threads()
                if solve:
                    # epilogue: the gate Gamma_ij = exp(G_i - G_j) <= 1 (j <= i; chunk_fwd applies beta elsewhere;
                    # the min() is a no-op for g <= 0, the op's contract, and keeps exp2 finite otherwise)
                    # Warp w gates the rows [w C/4, (w+1) C/4), lane l the column pair (2l, 2l+1): the pair's G is
                    # loaded once into registers, x_s is read in 8-byte pairs (one row of a warp at a
                    # time), the rows' G in 16-byte vectors, ao_s written in bf16 pairs. Loads come a batch of
                    # rows at a time, unmasked (above the diagonal x_s may hold anything; the select discards it),
                    # in flight together instead of one latency per element.
                    # With "mma" each warp gates its own row stripe from its registers instead (`gate_row_stripe`:
                    # no store of the blocks below the diagonal to x_s and no reload of them; only the diagonal
                    # block is read from x_s, and the C-fragment pairs land on distinct banks of the swizzled ao_s)
                    if stripes:
                        gate_row_stripe(x_s, xo, gc_s, ao_s, g_b, col_g, ob_s, tx, dtype, True)
                    else:
                        gate_rows(x_s, gc_s, 0, ao_s, None, x_b, g_b, o_b, col_g, tx, epilogue_batch, dtype)
                    # rows leave through shared memory (2-byte stores straight from the column-per-thread layout
                    # made kkt_solve 16% slower): a full chunk by one TMA store (a_store "tma"), a sequence's partial
                    # last chunk (or every chunk with "ldg") by masked 16-byte row stores (a TMA box would write into
                    # the next sequence's rows)
                    if a_store == "tma":
                        T.fence_proxy_async()  # every thread's generic ao_s writes -> the bulk store's async reads
                    if a_store == "tma":  # the blocks on or below the diagonal only (a_tile.py)
                        store_a_lower(ao_s, a, t0, t_end, hv, whole == 1)
                    else:
                        for i, j in T.Parallel(C, C):
                            if t0 + i < t_end:
                                a[t0 + i, hv, j] = ao_s[i, j]
                # the fused kernel's per-token factor rows, the whole chunk box: rows past the sequence's end are
                # zeros (beta = 0 there, and chunk_fwd's derived factors are zero past the end: those tokens drop out)
                store_factor_rows(rows, hv, r0, t0, t_end, gc_s, beta_s, rn_s, use_l2norm)
                if solve and a_store == "tma":
                    T.tma_store_wait()  # the staging tile must outlive the bulk store's reads

    return kkt_solve
