"""The per-token factor rows alone (G and beta), for chunk_fwd's fused-inverse variant without the in-kernel norms:
the rows-only pass of kkt_solve.py (solve=False) at a warp a (chunk slot, value head) instead of a 128-thread CTA.

Inputs (tokens of every sequence packed along one axis, T = total tokens):
    beta         [T, HV]     fp32
    g            [T, HV]     fp32 per-token log decay (<= 0)
    chunk_table  [S, 3]      int32, per chunk slot (t0, t_end, r0), as kkt_solve.py takes it (ops.chunk_table_for)
Outputs:
    rows         [2, HV, R_len] fp32, bitwise kkt_solve's rows without use_l2norm (kkt_solve.py's docstring):
                  rows[0]    G log2(e), the cumsum of g from the start of the token's chunk
                  rows[1]    beta
                             each written from row r0 on for the slot's 64 tokens, zeros past its sequence's end

Tile plan: a grid (S, ceil(HV / warps)) of CTAs of `warps` warps; warp w of CTA (s, b) takes value head
hv = b warps + w of slot s, lane l its tokens l and 32 + l. The cumsum is kkt_solve_gva's (chunk_inverse
scan_chunk_halves: both halves scanned inclusively by five warp shuffles, the upper half plus the lower half's total),
times log2(e): the same operations in the same order as kkt_solve's, so the same bits. One table row and one pair of
loads a lane: the rows-only pass of kkt_solve, a CTA a (slot, value head) whose life is two dependent global loads,
spent 23.7 us on 35B-TP1 8192x4 (H100, results/2026-11-27-h100-s35) for ~17 MB of traffic; this pass 13.4 us against
its 22.4 on an H200 (results/2026-11-27-h200-s36/rows_pass_ab).
"""

import tilelang
import tilelang.language as T

from .chunk_inverse import CHUNK, LOG2E, scan_chunk_halves
from .kkt_solve import ROW_BETA, ROW_G

HALF = CHUNK // 2  # a lane's two tokens: l and HALF + l
assert HALF == 32


def factor_rows_program(warps: int = 8, pdl: bool = True):
    """TileLang program of the factor-rows pass (see the module docstring); warps: value heads a CTA."""
    num_tokens = T.dynamic("num_tokens")
    num_v_heads = T.dynamic("num_v_heads")
    rows_len = T.dynamic("rows_len")
    num_slots = T.dynamic("num_slots")

    @T.prim_func
    def factor_rows(
        beta: T.Tensor((num_tokens, num_v_heads), "float32"),
        g: T.Tensor((num_tokens, num_v_heads), "float32"),
        chunk_table: T.Tensor((num_slots, 3), "int32"),
        rows: T.Tensor((2, num_v_heads, rows_len), "float32"),
    ):
        with T.Kernel(num_slots, T.ceildiv(num_v_heads, warps), threads=32 * warps) as (cid, hb):
            sc = T.alloc_local((4,), "float32")  # the two halves' running sums, the lower total (scan_chunk_halves)
            if pdl:  # before the first global read, as kkt_solve: chunk_fwd then launches behind this grid
                T.pdl_sync()
                T.pdl_trigger()
            t0 = chunk_table[cid, 0]
            t_end = chunk_table[cid, 1]
            r0 = chunk_table[cid, 2]
            tx = T.get_thread_binding()
            lane = tx % 32
            hv = hb * warps + tx // 32
            if (t0 < t_end) & (hv < num_v_heads):  # uniform over a warp: its shuffles run on every lane
                sc[0] = T.if_then_else(t0 + lane < t_end, g[t0 + lane, hv], 0.0)
                sc[1] = T.if_then_else(t0 + HALF + lane < t_end, g[t0 + HALF + lane, hv], 0.0)
                scan_chunk_halves(sc, lane)
                rows[ROW_G, hv, r0 + lane] = T.if_then_else(t0 + lane < t_end, sc[0] * LOG2E, 0.0)
                rows[ROW_G, hv, r0 + HALF + lane] = T.if_then_else(t0 + HALF + lane < t_end, (sc[1] + sc[2]) * LOG2E,
                                                                   0.0)
                rows[ROW_BETA, hv, r0 + lane] = T.if_then_else(t0 + lane < t_end, beta[t0 + lane, hv], 0.0)
                rows[ROW_BETA, hv, r0 + HALF + lane] = T.if_then_else(t0 + HALF + lane < t_end,
                                                                      beta[t0 + HALF + lane, hv], 0.0)

    return factor_rows
