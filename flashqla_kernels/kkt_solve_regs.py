"""kkt_solve with the chunk inverse in registers (inverse_regs.py): one CTA of 128 threads per (chunk slot, key
head), the gva value heads that share the key head one after another, as kkt_solve_gva.

Inputs and outputs: exactly kkt_solve's (kkt_solve.py): a [T, HV, C] the gated inverse A~ in k's dtype (per chunk the
16 x 16 blocks on or below the diagonal; a sequence's first chunk whole, a_tile.py), rows the factor rows (G in log2
units, beta, 1/||k|| with use_l2norm; zeros past each sequence's end). A~ differs from kkt_solve_gva's by rounding:
the gate is applied to L before the inverse (inverse_regs.py's math), the merges take fp16 operands.

Why: kkt_solve_gva's CTA is one dependent chain (K's load, K K^T, S to shared memory, a 16-step scalar substitution,
the row stripes reading L from shared memory, a gated epilogue), latency-bound at 5 CTAs an SM (Nsight Compute,
results/2026-11-27-h200-s37). Here K K^T stays in registers across the heads and each head's inverse is
inverse_regs.py's steps: the gate from the accumulator, 8 x 8 substitutions by shuffles, three merge levels by
mma.sync, the stripe to the staging tile by stmatrix.

Tile plan: grid (H, S) (key heads fastest, kkt_solve_gva's "heads") or (S, H) ("slots", past 65535 chunk slots).
K [C, K] by one TMA copy; K K^T by one wgmma into the accumulator (32 fp32 registers a thread, live across the heads;
with use_l2norm 1/||k|| from its diagonal into rn_s). Per head hv = hk gva + r: threads 0..63 (two warps) form the
chunk cumsum of g by shuffles (each warp both halves) from registers loaded a head earlier, into gc_s (log2 units)
and bs_s (beta); the warpgroup forms L~ in registers and the inverse (steps A..D, xh_s the exchange tile), writes its
blocks on or below the diagonal into the bf16 staging tile ao_s (a_tile.py's layout, upper blocks zero from the
start), which leaves by TMA (a_tile.store_a_lower), then the head's factor rows. Shared memory ~34 KB a CTA and up to
128 registers (launch bound min_blocks_per_sm = 4). CTA barriers are placed by hand (specs.manual_syncs).
"""

import tilelang.language as T

from .a_tile import a_tile_layout, first_chunk_of_sequence, store_a_lower
from .chunk_fwd import accumulator_layout
from .chunk_inverse import CHUNK, SUB, scan_chunk_halves
from .inverse_regs import (XH_STRIDE, gate_lower, invert_diag, merge_32, merge_64, rows_times_upper, store_stripe,
                           tile_of)
from .kkt_solve import LOG2E, factor_rows, store_factor_rows, store_key_norms


def kkt_solve_regs_program(dtype: str = "bfloat16", use_l2norm: bool = False, head_dim_k: int = 128,
                           min_blocks_per_sm: int = 4, pdl: bool = True, grid_order: str = "heads"):
    """min_blocks_per_sm: the launch bound (65536 / (128 x it) registers a thread): the accumulator, L~'s stripe and
    the inverse's stripe are 96 registers a thread. grid_order as kkt_solve_gva's."""
    K, C = head_dim_k, CHUNK
    assert grid_order in ("heads", "slots")
    threads = 2 * C
    PACK = "__pack_nv_bfloat162" if dtype == "bfloat16" else "__pack_half2"
    num_tokens = T.dynamic("num_tokens")
    rows_len = T.dynamic("rows_len")
    num_k_heads = T.dynamic("num_k_heads")
    num_v_heads = T.dynamic("num_v_heads")
    num_slots = T.dynamic("num_slots")

    @T.macro
    def load_head(g, beta, rg, t0, hv, tx):
        """Threads 0..63: head hv's g of tokens t0 + lane and t0 + 32 + lane (rg[0], rg[1]: both halves, for the
        warp's scan) and beta of token t0 + tx (rg[2]) into registers; a token past the tensor's end reads its last
        token's (values past the sequence's end are masked or written as zeros)."""
        lane = tx % 32
        rg[0] = g[T.min(t0 + lane, num_tokens - 1), hv]
        rg[1] = g[T.min(t0 + 32 + lane, num_tokens - 1), hv]
        rg[2] = beta[T.min(t0 + tx, num_tokens - 1), hv]

    @T.prim_func
    def kkt_solve_regs(
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
            k_s = T.alloc_shared((C, K), dtype)
            ao_s = T.alloc_shared((C, C), dtype)  # a head's A~ before its store
            xh_s = T.alloc_shared((C, XH_STRIDE), "float16")  # the inverse's cross-warp operands
            gc_s = T.alloc_shared((C,), "float32")  # the head's G (log2 units)
            bs_s = T.alloc_shared((C,), "float32")  # the head's beta
            rn_s = T.alloc_shared((C,), "float32")  # 1/||k|| (use_l2norm)
            T.annotate_layout({ao_s: a_tile_layout(ao_s)})
            kk_f = T.alloc_fragment((C, C), "float32")
            T.annotate_layout({kk_f: accumulator_layout(C, C)})  # read by (row, column) in gate_lower
            lr = T.alloc_local((C * C // threads,), "float32")
            sr = T.alloc_local((C * C // threads,), "float32")
            gr = T.alloc_local((2,), "float32")
            gcol = T.alloc_local((16,), "float32")
            bcol = T.alloc_local((16,), "float32")
            rg = T.alloc_local((3,), "float32")  # the next head's g (two tokens) and beta
            sc = T.alloc_local((4,), "float32")  # the cumsum's running sums and shuffled terms
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
            lane = tx % 32

            if t0 < t_end:
                if tx < 32:
                    T.tma_copy(k[t0:t0 + C, hk, :], k_s, barrier=k_ready[0])
                    T.barrier_arrive(k_ready[0])
                if tx < C:
                    load_head(g, beta, rg, t0, hk * gva, tx)
                for i, j in T.Parallel(C, C):  # A~'s blocks above the diagonal (no stripe store covers them)
                    if j // SUB > i // SUB:
                        ao_s[i, j] = T.cast(0, dtype)
                T.barrier_wait(k_ready[0], 0)
                T.sync_threads()  # every thread past K's wait before the wgmma
                T.gemm(k_s, k_s, kk_f, transpose_B=True, clear_accum=True)
                if use_l2norm:  # ||k_i||^2 is the diagonal
                    store_key_norms(kk_f, rn_s, tx)
                for hr in T.serial(gva):
                    hv = hk * gva + hr
                    T.sync_threads()  # the previous head's readers of gc_s and bs_s are done (rn_s is written)
                    if tx < C:  # the chunk cumsum of g (both warps scan both halves) and beta, then the next head's
                        sc[0] = rg[0]
                        sc[1] = rg[1]
                        scan_chunk_halves(sc, lane)
                        gc_s[tx] = T.if_then_else(tx < 32, sc[0], sc[1] + sc[2]) * LOG2E
                        bs_s[tx] = rg[2]
                        if hr + 1 < gva:
                            load_head(g, beta, rg, t0, hv + 1, tx)
                    T.sync_threads()
                    gate_lower(kk_f, lr, gc_s, bs_s, rn_s if use_l2norm else None, t0, t_end, tx, gr, gcol, bcol)
                    invert_diag(lr, sr, xh_s, tx)
                    T.sync_threads()
                    merge_32(lr, sr, xh_s, tx)
                    T.sync_threads()
                    rows_times_upper(lr, xh_s, tx)
                    T.sync_threads()
                    merge_64(sr, xh_s, tx)
                    T.tma_store_wait()  # the previous head's bulk store has read ao_s
                    T.sync_threads()
                    store_stripe(sr, tile_of(ao_s), tx, PACK, dtype)
                    T.fence_proxy_async()
                    T.sync_threads()
                    store_a_lower(ao_s, a, t0, t_end, hv, whole == 1)  # a_tile.py
                    store_factor_rows(rows, hv, r0, t0, t_end, gc_s, bs_s, rn_s, use_l2norm)
                T.tma_store_wait()

    return kkt_solve_regs
