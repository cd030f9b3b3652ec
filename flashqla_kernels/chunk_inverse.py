"""The chunk's unit lower triangular inverse X = (I + L)^-1 (L strictly lower, C x C fp32 in shared memory),
on one warpgroup of 128 threads: the TileLang macros that kkt_solve (its own CTA per chunk) and chunk_fwd's
fused variant (its auxiliary warpgroup, one chunk after another) share.

Plan (C = 64, blocks of SUB = 16 rows and columns):
  (1) `diag_block_inverse`: the four 16 x 16 diagonal blocks X_JJ by forward substitution, one thread per column
      (threads 0..C-1 of the warpgroup; block tx / SUB, column tx % SUB), the column in registers;
      `store_diag_block` writes it to x_s.
  (2) `solve_row_stripe`: warp I forms the blocks of its row stripe left of the diagonal, right to left, from
      X L = I:  X_IJ = -(sum_{K=J+1..I} X_IK L_KJ) X_JJ, by warp-level tf32 mma.sync m16n8k8 with hi/lo split
      operands (3xTF32, about fp32 accuracy), its own earlier blocks in registers and L, X_JJ from shared memory,
      so no warp waits for another inside the recurrence; `store_row_stripe` writes them to x_s afterwards
      (chunk_fwd's fused variant, then `gate_rows`), or `gate_row_stripe` gates them from the registers (kkt_solve).
Warp I's stripe has I(I+1)/2 + I block products (warp 3: nine), so the warps finish at different times.
"""

import tilelang.language as T

CHUNK = 64
LOG2E = 1.4426950408889634  # log2(e): G in log2 units is the prefix sum of g times this
SUB = CHUNK // 4  # diagonal block size; a row stripe is one m16 mma tile high
TF32_HI = 0xFFFFE000  # the bits a tf32 operand keeps (sign, exponent, 10 mantissa bits)
TF32_HALF = 0x1000  # half a tf32 unit in the last place: added before masking, rounds to nearest
XO_REGS = 8 * (CHUNK // SUB - 1)  # registers of a warp's row-stripe blocks (8 a block, three blocks at most)


@T.macro
def scan_chunk_halves(sc, lane):
    """One warp, a chunk's two halves by shuffles: sc[0] and sc[1] hold the lane's g of tokens l and 32 + l on entry
    and their halves' inclusive prefix sums on exit, sc[2] the lower half's total (sc[3] a scratch term); every lane
    of the warp takes part. G of token l is sc[0], of 32 + l sc[1] + sc[2] (kkt_solve_gva's and factor_rows' chunk
    cumsum; kkt_solve.py runs the same operations in scalars)."""
    for d in (1, 2, 4, 8, 16):
        sc[2] = T.shfl_up(sc[0], d)
        sc[3] = T.shfl_up(sc[1], d)
        if lane >= d:
            sc[0] = sc[0] + sc[2]
            sc[1] = sc[1] + sc[3]
    sc[2] = T.shfl_sync(sc[0], 31)


def at(buf, i):
    """buf[i], or buf(i) when buf is an accessor (a Python function of the index, e.g. one row of a 2-D buffer
    chosen at run time)."""
    return buf(i) if callable(buf) else buf[i]


def row_of(buf, *lead):
    """The accessor i -> buf[lead..., i] (one row of buf, chosen by run-time indices), for `at`. Built here, outside
    any prim_func body, whose Python TileLang rewrites."""
    return lambda i: buf[(*lead, i)]


def gated(x, g_row, g_col):
    """One element of the gated inverse, X_ij exp2(G_i - G_j) with G in log2 units (`gate_rows` and
    `gate_row_stripe` both form it so, hence the same bits). min() is a no-op for g <= 0 (the op's contract) and
    keeps exp2 finite otherwise."""
    return x * T.exp2(T.min(g_row - g_col, 0.0))


def diag_col(blk, c, diag_only):
    """Column of a diagonal block's element in x_s: block-local (x_s holds only the four diagonal blocks, each in its
    own rows, kkt_solve "mma") or global (x_s is the whole C x C tile)."""
    return c if diag_only else SUB * blk + c


@T.macro
def mma3(acc, c0, a_f, b_f, ah, al, bh, bl):
    """acc[c0:c0+4] += A B on one m16n8k8 tf32 mma tile, A and B (fp32 fragments a_f[4], b_f[2]) each split
    into a tf32 hi part and the remainder lo: A B ~ Al Bh + Ah Bl + Ah Bh (small terms first), ~fp32."""
    for r in T.unroll(4):
        ah[r] = T.reinterpret(a_f[r], "uint32") & T.uint32(TF32_HI)
        al[r] = T.reinterpret(a_f[r] - T.reinterpret(ah[r], "float32"), "uint32")
    for r in T.unroll(2):
        bh[r] = T.reinterpret(b_f[r], "uint32") & T.uint32(TF32_HI)
        bl[r] = T.reinterpret(b_f[r] - T.reinterpret(bh[r], "float32"), "uint32")
    for a_, b_ in ((al, bh), (ah, bl), (ah, bh)):
        T.ptx_mma("float32", "m16n8k8", "row", "col", "tf32", "tf32", "fp32", a_.data, 0, b_.data, 0,
                  acc.data, c0, False)


@T.macro
def mma1(acc, c0, a_f, b_f, ah, bh):
    """acc[c0:c0+4] += A B on one m16n8k8 tf32 mma tile, A and B rounded to tf32 (to nearest): one product
    (1xTF32, ~3x shorter dependent chains than `mma3`, each operand's relative rounding error <= 2^-11)."""
    for r in T.unroll(4):
        ah[r] = (T.reinterpret(a_f[r], "uint32") + T.uint32(TF32_HALF)) & T.uint32(TF32_HI)
    for r in T.unroll(2):
        bh[r] = (T.reinterpret(b_f[r], "uint32") + T.uint32(TF32_HALF)) & T.uint32(TF32_HI)
    T.ptx_mma("float32", "m16n8k8", "row", "col", "tf32", "tf32", "fp32", ah.data, 0, bh.data, 0,
              acc.data, c0, False)


@T.macro
def block_product(acc, c0, a_f, b_f, ah, al, bh, bl, split):
    """`mma3` (split, 3xTF32) or `mma1` (1xTF32); split is a Python bool."""
    if split:
        mma3(acc, c0, a_f, b_f, ah, al, bh, bl)
    else:
        mma1(acc, c0, a_f, b_f, ah, bh)


@T.macro
def diag_block_inverse(l_s, col, tx, col_scale=None, cb=None):
    """Thread tx < C: column tx % SUB of the inverse of L's diagonal block tx / SUB (unit lower triangular) into
    col[SUB] by forward substitution (reads only that block of l_s).
    col_scale (a buffer of C factors, e.g. beta, or an accessor, see `at`) and cb[SUB]: l_s holds S and L = S diag(col_scale), applied as
    L_rs col_s = S_rs (col_scale_s col_s), cb_s = col_scale_s col_s formed once row s is final."""
    blk = tx // SUB
    cj = tx % SUB
    for r in T.unroll(SUB):
        col[r] = T.if_then_else(r == cj, 1.0, 0.0)
        for s_ in T.unroll(SUB):
            if s_ < r:
                if col_scale is None:
                    col[r] = col[r] - l_s[blk * SUB + r, blk * SUB + s_] * col[s_]
                else:
                    col[r] = col[r] - l_s[blk * SUB + r, blk * SUB + s_] * cb[s_]
        if col_scale is not None:
            cb[r] = at(col_scale, blk * SUB + r) * col[r]


@T.macro
def store_diag_block(x_s, col, tx, diag_only=False):
    """Thread tx < C: its column of a diagonal block's inverse (`diag_block_inverse`) to x_s (block-local columns
    with diag_only, see `diag_col`)."""
    blk = tx // SUB
    cj = tx % SUB
    for r in T.unroll(SUB):
        x_s[blk * SUB + r, diag_col(blk, cj, diag_only)] = col[r]


@T.macro
def solve_row_stripe(l_s, x_s, xo, tt, a_f, b_f, ah, al, bh, bl, wi, gq, tq, I, split=True, diag_only=False):
    """Warp I (row stripe I of 16 rows; I is a Python int, so every index is static after unrolling): the blocks
    X_IJ of the inverse left of the diagonal, right to left, from X L = I:
        X_IJ = -(sum_{K=J+1..I} X_IK L_KJ) X_JJ,
    with X_II and X_JJ (the substitution's diagonal inverses, in x_s) and L from shared memory, and X_IK (K < I)
    from this warp's registers. mma.sync m16n8k8 tf32 fragments, lane (g, t) = (lane / 4, lane % 4), with the k
    index permuted (logical t <-> column 2t, t + 4 <-> 2t + 1) so that an accumulator (C) fragment is an A
    fragment as it stands: A of k-step s = (X[g, 8s + 2t], X[g + 8, 8s + 2t], X[g, 8s + 2t + 1],
    X[g + 8, 8s + 2t + 1]) = C registers (0, 2, 1, 3) of tile s, and a B fragment of Y for n-tile q =
    (Y[8s + 2t, 8q + g], Y[8s + 2t + 1, 8q + g]).
    split: 3xTF32 products (`mma3`, ~fp32) or 1xTF32 (`mma1`).
    xo: X_IJ's C fragments, 8 registers a block (index 8 J + 4 q + 2 h + e: row g + 8 h, column 8 q + 2 t + e).
    No shared memory is written here (a barrier inside one warp's branch would hang or race); `store_row_stripe`
    writes the results after all warps' branches."""
    if wi == I:
        for jj in T.unroll(I):
            J = I - 1 - jj
            for r in T.unroll(8):
                tt[r] = 0.0
            for kb in T.unroll(I):
                Kb = kb + 1  # K = 1..I; the terms K <= J are skipped
                if Kb > J:
                    for s_ in T.unroll(2):
                        for r in T.unroll(4):  # A = X_IK, k-step s_
                            if Kb == I:
                                a_f[r] = x_s[SUB * I + gq + 8 * (r % 2),
                                             diag_col(I, 8 * s_ + 2 * tq + r // 2, diag_only)]
                            else:
                                a_f[r] = xo[8 * Kb + 4 * s_ + 2 * (r % 2) + r // 2]
                        for q in T.unroll(2):  # B = L_KJ, n-tile q
                            for r in T.unroll(2):
                                b_f[r] = l_s[SUB * Kb + 8 * s_ + 2 * tq + r, SUB * J + 8 * q + gq]
                            block_product(tt, 4 * q, a_f, b_f, ah, al, bh, bl, split)
            # X_IJ = -(T X_JJ)
            for r in T.unroll(8):
                xo[8 * J + r] = 0.0
            for s_ in T.unroll(2):
                for r in T.unroll(4):
                    a_f[r] = tt[4 * s_ + 2 * (r % 2) + r // 2]
                for q in T.unroll(2):
                    for r in T.unroll(2):
                        b_f[r] = x_s[SUB * J + 8 * s_ + 2 * tq + r, diag_col(J, 8 * q + gq, diag_only)]
                    block_product(xo, 8 * J + 4 * q, a_f, b_f, ah, al, bh, bl, split)
            for r in T.unroll(8):
                xo[8 * J + r] = -xo[8 * J + r]


@T.macro
def to_f16(dst, d0, src, s0, n):
    """dst[d0:d0+n] = src[s0:s0+n] rounded to fp16 (to nearest), a pair per conversion (n, d0, s0 even)."""
    for p in T.unroll(n // 2):
        for e in T.vectorized(2):
            dst[d0 + 2 * p + e] = T.cast(src[s0 + 2 * p + e], "float16")


@T.macro
def mma_f16(acc, c0, a_h, a0, b_h):
    """acc[c0:c0+4] += A B on one m16n8k16 fp16 mma tile (fp32 accumulation): A = a_h[a0:a0+8] (halves in the
    A-fragment order, see `solve_row_stripe_f16`), B = b_h[0:4]."""
    T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", a_h.data, a0, b_h.data, 0,
              acc.data, c0, False)


@T.macro
def stripe_diag_a(x_s, xa, bf, gq, tq, I, diag_only):
    """The fp16 row stripes' first A operand: X_II (warp I's diagonal inverse, from x_s) into xa[8 I:8 I + 8]."""
    for i in T.unroll(8):
        bf[i] = x_s[SUB * I + gq + 8 * (i // 2 % 2), diag_col(I, 8 * (i // 4) + 2 * tq + i % 2, diag_only)]
    to_f16(xa, 8 * I, bf, 0, 8)


@T.macro
def stripe_times_diag(x_s, xo, xa, th, bq, bf, gq, tq, J, diag_only):
    """The fp16 row stripes' last step for block J: X_IJ = M X_JJ into xo[8 J:8 J + 8] (zeroed by the caller), M the
    caller's C fragment in bf[0:8] (-T_IJ, with any column factor applied), X_JJ from x_s; then X_IJ as an A operand of
    the blocks left of it (xa)."""
    to_f16(th, 0, bf, 0, 8)
    for q in T.unroll(2):
        for r in T.unroll(4):
            bf[r] = x_s[SUB * J + 8 * (r // 2) + 2 * tq + r % 2, diag_col(J, 8 * q + gq, diag_only)]
        to_f16(bq, 0, bf, 0, 4)
        mma_f16(xo, 8 * J + 4 * q, th, 0, bq)
    if J > 0:  # X_IJ is an A operand of the blocks left of it
        to_f16(xa, 8 * J, xo, 8 * J, 8)


@T.macro
def solve_row_stripe_f16(l_s, x_s, xo, tt, xa, th, bq, bf, wi, gq, tq, I, diag_only=False, col_scale=None,
                         ldsm=None):
    """`solve_row_stripe` with fp16 operands on m16n8k16 tiles: one 16 x 16 x 16 block product is two mma (one an
    n-tile) instead of four m16n8k8 tf32 mma with their operand roundings. fp16 keeps the 10 mantissa bits of the
    1xTF32 operands (both round to nearest), so within fp16's range the products are as accurate; the range holds
    for a delta-rule chunk (|L_ij| <= beta_j ||k_i|| ||k_j||, the inverse's entries O(1)); an operand beyond
    65504 would become inf (see kkt_solve's `merge`).
    Fragments (lane (g, t) = (lane / 4, lane % 4)): a C fragment of n-tile q holds (row g + 8 h, column 8 q + 2 t + e)
    at 4 q + 2 h + e, and the A fragment of a 16-wide k holds (row g + 8 h, k 8 q + 2 t + e) at the same index
    4 q + 2 h + e, so a block's result converts to the next product's A operand element by element; B of n-tile q
    holds (k 8 kk + 2 t + e, column 8 q + g) at 2 kk + e.
    xa: the fp16 A fragments of X_IK (8 halves a block, at 8 K; K = I is the diagonal inverse from x_s);
    th: -T as an A fragment; bq: one n-tile's B fragment (L_KJ or X_JJ, converted from fp32 shared memory).
    col_scale: as in `diag_block_inverse` (l_s holds S, L_KJ = S_KJ diag(col_scale_J): one factor an n-tile).
    ldsm: None, or (sh, b8, lane) for L's blocks from an fp16 copy of S by ldmatrix (`solve_row_stripe_f16_ldsm`)."""
    if wi == I:
        stripe_diag_a(x_s, xa, bf, gq, tq, I, diag_only)
        for jj in T.unroll(I):
            J = I - 1 - jj
            for r in T.unroll(8):
                tt[r] = 0.0
            for kb in T.unroll(I):
                Kb = kb + 1  # K = 1..I; the terms K <= J are skipped
                if ldsm is not None:  # both n-tiles' B fragments of L_KJ by one ldmatrix from the fp16 copy
                    if Kb > J:
                        T.call_extern("handle", "tl::ptx_ldmatrix_x4_trans",
                                      T.address_of(ldsm[0](Kb, 8 * ((ldsm[2] // 8) % 2) + ldsm[2] % 8,
                                                           SUB * J + 8 * (ldsm[2] // 16))),
                                      T.address_of(ldsm[1][0]))
                        for q in T.unroll(2):
                            mma_f16_b(tt, 4 * q, xa, 8 * Kb, ldsm[1], 4 * q)
                elif Kb > J:
                    for q in T.unroll(2):
                        for r in T.unroll(4):
                            if col_scale is None:
                                bf[r] = l_s[SUB * Kb + 8 * (r // 2) + 2 * tq + r % 2, SUB * J + 8 * q + gq]
                            else:
                                bf[r] = l_s[SUB * Kb + 8 * (r // 2) + 2 * tq + r % 2, SUB * J + 8 * q + gq] * \
                                    at(col_scale, SUB * J + 8 * q + gq)
                        to_f16(bq, 0, bf, 0, 4)
                        mma_f16(tt, 4 * q, xa, 8 * Kb, bq)
            for r in T.unroll(8):
                if ldsm is not None:  # X_IJ = (-T diag(col_scale_J)) X_JJ; r is column 8 (r / 4) + 2 t + r % 2 of J
                    bf[r] = -(tt[r] * at(col_scale, SUB * J + 8 * (r // 4) + 2 * tq + r % 2))
                else:  # X_IJ = (-T) X_JJ
                    bf[r] = -tt[r]
                xo[8 * J + r] = 0.0
            stripe_times_diag(x_s, xo, xa, th, bq, bf, gq, tq, J, diag_only)


@T.macro
def mma_f16_b(acc, c0, a_h, a0, b_h, b0):
    """`mma_f16` with B = b_h[b0:b0+4]."""
    T.ptx_mma("float32", "m16n8k16", "row", "col", "fp16", "fp16", "fp32", a_h.data, a0, b_h.data, b0,
              acc.data, c0, False)


@T.macro
def solve_row_stripe_f16_ldsm(sh, x_s, xo, tt, xa, th, bq, bf, b8, wi, gq, tq, lane, I, col_scale):
    """`solve_row_stripe_f16` (diagonal blocks in x_s block-local, `diag_col`) with L's blocks read from an fp16 copy
    of S = strict_lower(K K^T) (no column factor) through the accessor sh(K, r, c) (row r of row block K, column c:
    an element whose address ldmatrix reads), by one ldmatrix.x4.trans
    a block (both n-tiles' B fragments) instead of 16 scalar fp32 loads, 8 multiplies by the column factor and 4
    conversions. The column factor of L =
    S diag(col_scale) is applied once to the sum T_IJ = sum_K X_IK S_KJ (all its terms share block J's columns):
    X_IJ = (-T_IJ diag(col_scale_J)) X_JJ. The 8 rows of an 8 x 8 matrix must fall on distinct banks (a padded
    stride or a swizzle). Lane l addresses row 16 K + 8 ((l / 8) % 2) + l % 8, columns 16 J + 8 (l / 16)
    .. + 7: matrix m = l / 8 = 2 q + kk lands in b8[2 m], b8[2 m + 1], i.e. n-tile q's B fragment at b8[4 q]."""
    solve_row_stripe_f16(None, x_s, xo, tt, xa, th, bq, bf, wi, gq, tq, I, True, col_scale, (sh, b8, lane))


@T.macro
def solve_row_stripes_f16_ldsm(sh, x_s, xo, tt, xa, th, bq, bf, b8, tx, col_scale):
    """`solve_row_stripe_f16_ldsm` for the warp of thread tx, row stripes 1..3."""
    wi = tx // 32
    lane = tx % 32
    gq = lane // 4
    tq = tx % 4
    for I in (1, 2, 3):
        solve_row_stripe_f16_ldsm(sh, x_s, xo, tt, xa, th, bq, bf, b8, wi, gq, tq, lane, I, col_scale)


@T.macro
def solve_row_stripes_f16(l_s, x_s, xo, tt, xa, th, bq, bf, tx, diag_only=False, col_scale=None):
    """`solve_row_stripe_f16` for the warp of thread tx, row stripes 1..3."""
    wi = tx // 32
    gq = (tx % 32) // 4
    tq = tx % 4
    for I in (1, 2, 3):
        solve_row_stripe_f16(l_s, x_s, xo, tt, xa, th, bq, bf, wi, gq, tq, I, diag_only, col_scale)


@T.macro
def solve_row_stripes(l_s, x_s, xo, tt, a_f, b_f, ah, al, bh, bl, tx, split=True, diag_only=False):
    """`solve_row_stripe` for the warp of thread tx (of a 128-thread warpgroup), row stripes 1..3 (stripe 0 has no
    block left of the diagonal)."""
    wi = tx // 32
    gq = (tx % 32) // 4
    tq = tx % 4
    for I in (1, 2, 3):
        solve_row_stripe(l_s, x_s, xo, tt, a_f, b_f, ah, al, bh, bl, wi, gq, tq, I, split, diag_only)


@T.macro
def store_row_stripe(x_s, xo, tx):
    """Every warp's blocks X_{wi,J}, J < wi (wi = tx / 32), from its registers (`solve_row_stripe`) to x_s (float2
    stores)."""
    wi = tx // 32
    gq = (tx % 32) // 4
    tq = tx % 4
    for jb in T.unroll(CHUNK // SUB - 1):
        if jb < wi:
            for qh in T.unroll(4):
                for e in T.vectorized(2):
                    x_s[SUB * wi + gq + 8 * (qh % 2), SUB * jb + 8 * (qh // 2) + 2 * tq + e] = \
                        xo[8 * jb + 4 * (qh // 2) + 2 * (qh % 2) + e]


@T.macro
def gate_row_stripe(x_s, xo, g_buf, out, g_r, g_c, o_s, tx, dtype, diag_only=False, factors=None, r_f=None):
    """kkt_solve's gated epilogue straight from the row stripes' registers (after `solve_row_stripes`, in place of
    `store_row_stripe` and `gate_rows`): warp I = tx / 32 writes the rows [16 I, 16 I + 16) of
    A~_ij = X_ij exp(G_i - G_j) (j <= i, else 0) in `dtype` to out, lane (g, t) = (lane / 4, lane % 4) the rows g, g + 8
    and the column pair 8 q + 2 t, + 1 of each 8-column tile (the mma C-fragment layout of xo): the blocks left of the
    diagonal from xo, the diagonal block X_II from x_s, zeros right of it. The blocks below the diagonal are neither
    stored to x_s nor reloaded. Per element the same operations as `gate_rows` (so the same bits); G in g_buf[row] is
    in log2 units. x_s is only read (its diagonal blocks); `out` may alias L's tile only after a barrier that ends the
    recurrence's reads of L.
    Every load comes before the first store: the warp's 32 results are held in o_s[32] and stored by one statement in
    one loop. TileLang's shared-memory sync pass fences a store from a later load or store that it cannot prove
    independent, and such a barrier inside one warp's branch is a race (the first version failed the GPU tests so).
    Measured on H200 (results/2026-11-24-h200-s17): kkt_solve -5.5%. A single code path for all warps (warp-uniform
    tests per element instead of one branch a warp) lost that gain; in chunk_fwd's fused variant both forms were
    slower than `gate_rows` (+6.5% and +17%), so that variant keeps `store_row_stripe` and `gate_rows`.
    g_r[2], g_c[2]: the rows' and a column pair's G. diag_only: x_s holds only the diagonal blocks (`diag_col`).
    factors (fb, rf_idx, cf_idx: an fp32 buffer and the index maps of `block_gate_factors`' rf and cf) and r_f[2]:
    the blocks below the diagonal are gated as X_ij rf[J, i] cf[j] = X_ij exp2(G_i - G_b) exp2(G_b - G_j) with
    b = 16 J + 15, the last row of column block J
    (both exponents non-positive: i > b >= j), two multiplies an element instead of an exp2; the diagonal blocks as
    before."""
    wi = tx // 32
    gq = (tx % 32) // 4
    tq = tx % 4
    for I in (0, 1, 2, 3):  # a Python tuple (range would become a TIR loop): the block tests below are constants
        if wi == I:
            for h in T.unroll(2):
                g_r[h] = g_buf[SUB * I + gq + 8 * h]
            for J in (0, 1, 2, 3):
                if factors is not None and J < I:
                    for h in T.unroll(2):
                        r_f[h] = factors[0][factors[1](J, SUB * I + gq + 8 * h)]
                for q in T.unroll(2):
                    if factors is not None and J < I:
                        for e in T.vectorized(2):
                            g_c[e] = factors[0][factors[2](SUB * J + 8 * q + 2 * tq + e)]
                    elif J <= I:
                        for e in T.vectorized(2):
                            g_c[e] = g_buf[SUB * J + 8 * q + 2 * tq + e]
                    for h in T.unroll(2):
                        m = 4 * J + 2 * q + h  # the pair's index (o_s[2 m], o_s[2 m + 1]; xo's block order)
                        for e in T.unroll(2):
                            if J < I and factors is not None:
                                o_s[2 * m + e] = T.cast(xo[8 * J + 4 * q + 2 * h + e] * r_f[h] * g_c[e], dtype)
                            elif J < I:
                                o_s[2 * m + e] = T.cast(gated(xo[8 * J + 4 * q + 2 * h + e], g_r[h], g_c[e]), dtype)
                            elif J == I:
                                o_s[2 * m + e] = T.cast(T.if_then_else(
                                    8 * q + 2 * tq + e <= gq + 8 * h,
                                    gated(x_s[SUB * I + gq + 8 * h, diag_col(I, 8 * q + 2 * tq + e, diag_only)],
                                          g_r[h], g_c[e]), 0.0), dtype)
                            else:
                                o_s[2 * m + e] = T.cast(0.0, dtype)
            for m in T.unroll(CHUNK // 4):  # m = 4 J + 2 q + h
                for e in T.vectorized(2):
                    out[SUB * I + gq + 8 * (m % 2), SUB * (m // 4) + 8 * (m // 2 % 2) + 2 * tq + e] = o_s[2 * m + e]


@T.macro
def block_gate_factors(gc_lo, gc_hi, lo_total, fb, rf_idx, cf_idx, i, gf):
    """Threads i = 0..63 of two warps, each holding the chunk's inclusive prefix sums of g by halves (lane l:
    gc_lo = sum g[0..l], gc_hi = sum g[32..32+l], lo_total = sum g[0..31]; natural-log units, as `chunk_cumsum`
    of kkt_solve_gva leaves them): the factors of `gate_row_stripe`'s blocks below the diagonal, with G = the
    prefix sum times log2(e) formed by the same operations as the cumsum's stored values (so G_b is bitwise G of
    row b), into the fp32 buffer fb at the index tuples rf_idx(J, i) and cf_idx(i): rf[J, i] =
    exp2(min(G_i - G_b, 0)) and cf[i] = exp2(min(G_b' - G_i, 0)), b = 16 J + 15 (J = 0, 1,
    2), b' the last row of i's own block (entries for rows or columns that no block below the diagonal uses are
    written and never read). gf[4]: G_i, G_15, G_31, G_47."""
    gf[0] = T.if_then_else(i < 32, gc_lo, gc_hi + lo_total) * LOG2E
    gf[1] = T.shfl_sync(gc_lo, 15) * LOG2E
    gf[2] = lo_total * LOG2E
    gf[3] = (T.shfl_sync(gc_hi, 15) + lo_total) * LOG2E
    for J in T.unroll(3):
        fb[rf_idx(J, i)] = T.exp2(T.min(gf[0] - gf[1 + J], 0.0))
    fb[cf_idx(i)] = T.exp2(T.min(T.if_then_else(i < 16, gf[1], T.if_then_else(i < 32, gf[2], gf[3])) - gf[0], 0.0))


@T.macro
def gate_rows(x_s, g_buf, g_off, out, out_lead, x_b, g_b, o_b, col_g, tx, batch, dtype):
    """The gated inverse's epilogue, A~_ij = X_ij exp(G_i - G_j) (j <= i, else 0) in `dtype`: warp w = tx / 32 of the
    warpgroup gates the rows [16 w, 16 w + 16), lane l the column pair (2 l, 2 l + 1); the pair's G is loaded once,
    then `batch` rows at a time: their G (g_buf[g_off + row], one vector), their X pairs (8-byte loads, unmasked:
    above the diagonal x_s may hold anything, the select discards it), then the gate. out[row, col] (out_lead None) or
    out[out_lead, row, col] gets the bf16 pairs. G in g_buf is in log2 units (G log2(e), as kkt_solve's rows[0]);
    each element by `gated`."""
    cp = (tx % 32) * 2
    row0 = (tx // 32) * SUB
    for u in T.unroll(2):
        col_g[u] = g_buf[g_off + cp + u]
    for bb in T.serial(SUB // batch):
        for e in T.vectorized(batch):
            g_b[e] = g_buf[g_off + row0 + bb * batch + e]
        for e in T.unroll(batch):
            for u in T.vectorized(2):
                x_b[e * 2 + u] = x_s[row0 + bb * batch + e, cp + u]
        for e in T.unroll(batch):
            ei = row0 + bb * batch + e
            for u in T.unroll(2):
                o_b[u] = T.cast(T.if_then_else(cp + u <= ei, gated(x_b[e * 2 + u], g_b[e], col_g[u]), 0.0), dtype)
            for u in T.vectorized(2):
                if out_lead is None:
                    out[ei, cp + u] = o_b[u]
                else:
                    out[out_lead, ei, cp + u] = o_b[u]
