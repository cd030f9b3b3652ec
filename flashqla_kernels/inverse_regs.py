"""The chunk's gated inverse A~ = (I + L~)^-1 in registers, on one warpgroup (chunk_fwd's fused variant with
inverse_form "regs"): the gate applied before the inverse, 8 x 8 diagonal blocks by shuffles, block merges at 16,
32 and 64 rows by mma.sync with fp16 operands and fp32 accumulation.

Why: Nsight Compute (H200, results/2026-11-27-h200-s37/ncu_peer) put the "stripes" inverse (chunk_inverse.py: L in
an fp32 tile, a 16-step scalar substitution, row stripes of fp16 products, the gate after it from shared memory) at
~3600 warp instructions and ~1450 shared wavefronts a chunk, about twice what FlashInfer's kernel spends; the fused
kernel is latency-bound, its time follows what it executes.
Measured (session 38): the fused chunk_fwd executes 19.9 M warp instructions instead of 22.1 M on 2B-TP1 1024x8
(FlashInfer's kernel: 18.8 M) and takes 1-3.5% less time on the H200 (64.6 against 65.4 us there, 408 against 423 us
on 35B-TP1 8192x4) and on the H100 (407 against 422 us on 35B-TP1 8192x4); outputs within the float64 tests'
tolerance and no less accurate than the stripes form's (tests/test_gpu_kernels.py). Its steps A..D are now ~5% of the
kernel's instructions; the gate (an exp2 an element, 32 a thread) ~9.5%. Not kept (results/2026-11-27-h200-s38):
forming only the tiles a warp reads (per-warp code: 680 bytes of spill, +26%), the gate of the blocks left of the
diagonal by row and column factors (warp-uniform branches: +19%), and a kkt_solve_gva with this inverse (+12% at GVA
1 to +31% at GVA 4: more barriers a head, 4 CTAs an SM instead of 5).

Math (C = 64; G the chunk-local cumsum of log decay in log2 units, all exponents non-positive):
    L~_ij = (K K^T)_ij beta_j exp2(G_i - G_j) for j < i (rows past the sequence's end 0), 0 otherwise
    A~ = (I + L~)^-1 = D (I + L)^-1 D^-1 with D = diag(exp2 G), L = strict_lower(K K^T diag(beta)):
         the gated inverse (.) Gamma of chunk_inverse.py, equal in exact arithmetic.
Tile plan (warp w of the warpgroup owns rows 16 w .. 16 w + 15; lane (g, t) = (lane / 4, lane % 4) holds, as K K^T's
wgmma accumulator does, rows g and g + 8 and the column pairs 8 q + 2 t, + 1, register 4 q + 2 h + e):
    A (every warp) its 16 x 16 diagonal block: the two 8 x 8 diagonal blocks by forward substitution over 7 shuffle
      steps (fp32, `flashqla_inv8`), the lower-left block X_10 = -X_11 L_10 X_00 by two mma m16n8k8, the right
      operands transposed in registers by movmatrix; warps 0..2 store theirs (fp16) to xh_s.
    B (warps 1, 3) X_{w,w-1} = -X_ww L_{w,w-1} X_{w-1,w-1}: four mma m16n8k16 (X_{w-1,w-1} by ldmatrix.trans from
      xh_s, the product by movmatrix); warp 1 stores X_10 (the upper 32 x 32 inverse X_hi is then in xh_s).
    C (warps 2, 3) T_w = L_{w,0:32} X_hi: six mma (X_hi's upper-right block is zero), stored fp16 to xh_s.
    D (warps 2, 3) X_{w,0:32} = -sum_{k=2..w} X_wk T_k: four or eight mma.
    E (every warp) its row stripe's blocks on or below the diagonal to A~'s tile in the input dtype, one stmatrix.x4
      a 16 x 16 block (the blocks above stay zero, written once at the kernel's start).
Named barriers between A, B, C and D (the caller's); every cross-warp operand goes through xh_s (fp16, [C, C + 8]:
rows of 144 bytes, so the eight rows of an ldmatrix or stmatrix fall on distinct banks). Registers a thread: L~'s
32, the stripe's 32 and up to 16 accumulators.
Precision: fp16 operands carry 11 significant bits, as the stripes' fp16 products did; entries beyond 65504 would
overflow (|L~_ij| <= beta_j ||k_i|| ||k_j||, so this needs keys of norm above ~250).
"""

import tilelang.language as T

from .chunk_inverse import CHUNK, SUB, at


XH_STRIDE = CHUNK + 8  # halves a row of the fp16 exchange tile xh_s
assert CHUNK == 64 and SUB == 16

def warp_lane(ta):
    """(warp, lane, g, t) of thread ta of the warpgroup."""
    lane = ta % 32
    return ta // 32, lane, lane // 4, lane % 4


@T.macro
def gate_lower(kk_f, lr, g_at, beta_at, rk_at, t0, seq_end, ta, gr, gcol, bcol):
    """Step 0: L~ of the chunk from K K^T's accumulator kk_f (`accumulator_layout`) into lr[32] (register
    4 q + 2 h + e: row 16 w + g + 8 h, column 8 q + 2 t + e): (K K^T)_ij beta_j exp2(min(G_i - G_j, 0)) for j < i and
    rows inside the sequence, else 0. g_at, beta_at, rk_at: buffers or accessors (chunk_inverse.at) of the chunk's G
    (log2 units), beta and, when rk_at is not None, 1/||k|| (both the row's and the column's factor then).
    gr[2], gcol[16], bcol[16]: the rows' G and the columns' G and column factors."""
    wi, lane, gq, tq = warp_lane(ta)
    for h in T.unroll(2):
        gr[h] = at(g_at, SUB * wi + gq + 8 * h)
    for q in T.unroll(8):
        for e in T.vectorized(2):
            gcol[2 * q + e] = at(g_at, 8 * q + 2 * tq + e)
        for e in T.vectorized(2):
            bcol[2 * q + e] = at(beta_at, 8 * q + 2 * tq + e)
    if rk_at is not None:
        for q in T.unroll(8):
            for e in T.unroll(2):
                bcol[2 * q + e] = bcol[2 * q + e] * at(rk_at, 8 * q + 2 * tq + e)
    # every tile, the same code in every warp: forming only the tiles the warp's steps read (q <= 2 w + 1, a copy of
    # this loop a warp) made ptxas spill 680 bytes and the fused chunk_fwd 26% slower (session 38, H200)
    for q in T.unroll(8):
        for h in T.unroll(2):
            for e in T.unroll(2):
                lr[4 * q + 2 * h + e] = T.if_then_else(
                    (8 * q + 2 * tq + e < SUB * wi + gq + 8 * h) & (t0 + SUB * wi + gq + 8 * h < seq_end),
                    kk_f[SUB * wi + gq + 8 * h, 8 * q + 2 * tq + e] * bcol[2 * q + e] *
                    T.exp2(T.min(gr[h] - gcol[2 * q + e], 0.0)) *
                    (1.0 if rk_at is None else at(rk_at, SUB * wi + gq + 8 * h)), 0.0)


@T.macro
def invert_diag(lr, sr, xh_s, ta):
    """Step A (every warp): its diagonal 16 x 16 block of the inverse into sr[8 w .. 8 w + 7]; warps 0..2 store theirs
    to xh_s. A barrier of the warpgroup must follow before step B."""
    wi, lane, gq, tq = warp_lane(ta)
    for I in (0, 1, 2, 3):  # a Python tuple: I static, so every register index is a constant
        if wi == I:
            T.call_extern("handle", "flashqla_inv_diag", T.address_of(lr[0]), T.address_of(sr[0]), I, lane,
                          T.address_of(xh_s[0, 0]), 1 if I < 3 else 0)


@T.macro
def merge_32(lr, sr, xh_s, ta):
    """Step B (warps 1, 3): the block left of the diagonal block, X_{w,w-1}, into sr; warp 1 stores X_10 to xh_s.
    A barrier of the warpgroup must follow before step C."""
    wi, lane, gq, tq = warp_lane(ta)
    for I in (1, 3):
        if wi == I:
            T.call_extern("handle", "flashqla_inv_merge32", T.address_of(lr[0]), T.address_of(sr[0]), I, lane,
                          T.address_of(xh_s[0, 0]), 1 if I == 1 else 0)


@T.macro
def lower_rows_step(helper, regs, xh_s, ta):
    """Warps 2 and 3 (the rows 32..63) each call the CUDA helper `helper` on their register array regs and xh_s."""
    wi, lane, gq, tq = warp_lane(ta)
    for I in (2, 3):
        if wi == I:
            T.call_extern("handle", helper, T.address_of(regs[0]), I, lane, T.address_of(xh_s[0, 0]))


@T.macro
def rows_times_upper(lr, xh_s, ta):
    """Step C (warps 2, 3): T_w = L~_{w,0:32} X_hi to xh_s. A barrier of the warpgroup must follow before step D."""
    lower_rows_step("flashqla_inv_rows_hi", lr, xh_s, ta)


@T.macro
def merge_64(sr, xh_s, ta):
    """Step D (warps 2, 3): X_{w,0:32} into sr[0:16]."""
    lower_rows_step("flashqla_inv_rows_lo", sr, xh_s, ta)


def tile_of(buf, *lead):
    """The accessor (i, j) -> buf[lead..., i, j] (one C x C tile of buf), for `store_stripe`; built outside any
    prim_func body, as chunk_inverse.row_of."""
    return lambda i, j: buf[(*lead, i, j)]


@T.macro
def store_stripe(sr, tile, ta, pack, dtype):
    """Step E (every warp): its row stripe's 16 x 16 blocks on or below the diagonal from sr to the A~ tile (`tile`:
    an accessor, `tile_of`) in `dtype` (`pack`: the CUDA function packing two values of it into 32 bits), one
    stmatrix.x4 a block (lane l addresses row l % 8 of matrix l / 8 = (row half, column half)). Rounds to nearest, as
    T.cast."""
    wi, lane, gq, tq = warp_lane(ta)
    for I in (0, 1, 2, 3):
        if wi == I:
            for J in (0, 1, 2, 3):
                if J <= I:
                    T.call_extern(
                        "handle", "tl::ptx_stmatrix_x4",
                        T.address_of(tile(SUB * I + 8 * ((lane // 8) % 2) + lane % 8, SUB * J + 8 * (lane // 16))),
                        T.call_extern("uint32", pack, T.cast(sr[8 * J], dtype), T.cast(sr[8 * J + 1], dtype)),
                        T.call_extern("uint32", pack, T.cast(sr[8 * J + 2], dtype), T.cast(sr[8 * J + 3], dtype)),
                        T.call_extern("uint32", pack, T.cast(sr[8 * J + 4], dtype), T.cast(sr[8 * J + 5], dtype)),
                        T.call_extern("uint32", pack, T.cast(sr[8 * J + 6], dtype), T.cast(sr[8 * J + 7], dtype)))
