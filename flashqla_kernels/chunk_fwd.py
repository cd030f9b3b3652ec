"""Fused GDN chunked forward: deltas, state update and output for every chunk, the state kept in registers.

Inputs (tokens of all sequences packed along one axis, T tokens, N sequences):
    q, k       [T, H, K]     bf16/fp16 (value head hv reads key head hv // (HV // H); nothing repeated)
    v          [T, HV, V]    bf16/fp16
    rows       [R, HV, R_len] fp32 per-token factor rows from kkt_solve (one TMA box a chunk): G log2(e) (the
                             chunk-local cumsum of the log decay, in log2 units), beta, and with use_l2norm 1/||k||
                             (R = kkt_solve.factor_rows); sequence n's tokens from row
                             rows_start(n) = round_up(cu_seqlens[n], 4) + C n, each sequence followed by zero rows
    a          [T, HV, C]    gated inverse A~ = (I + strict_lower(K K^T diag(beta)))^-1 (.) Gamma, from kkt_solve
                             (A~'s diagonal is exactly 1 in bf16; the delta rule's beta enters O's operand Vn and
                             the state update's factor uf: see kkt_solve.py); not read by the fused_inverse
                             variant, which forms A~ itself (kkt_solve then writes only `rows`)
    h0         [N(+1), HV, K, V] fp32 initial states (read only when flags & 1)
    cu_seqlens [N + 1]       int32
    scale      fp32 run-time scalar; flags int32: bit 0 = h0 given, bit 1 = write final state
    hv_base, launch_heads  int32: the launch covers value heads [hv_base, hv_base + launch_heads) (all HV, or one
                             part of a head split: torch-ext/flashqla/dispatch.py choose_head_split)
    seq_table  [N + 1, 4]    int32: row i = (n, cu_seqlens[n], cu_seqlens[n + 1], 0) for the i-th sequence in
                             the order a persistent grid hands the items out (longest first; the last row unused;
                             not read with a CTA an item, which takes the sequences in index order), ops.sequence_table
    num_ctas   int32         the grid: the item count (one item a CTA) or fewer (a persistent grid, each CTA
                             walking several items: dispatch.choose_grid)
Outputs:
    o          [T, HV, V]    q's dtype
    ht         [N(+1), HV, K, V] fp32 final states (written only when flags & 2)

Per chunk (C tokens, local index r, S0 the state entering it, G the chunk-local cumsum of g), written for
the transposed state S^T [V, K], which is what the kernel holds:
    gamma_r = exp(G_r), Gamma_rs = exp(G_r - G_s) (r >= s), d_r = exp(G_last - G_r)   (all exponents <= 0)
    W^T  = V^T - (S0^T K^T) diag(gamma) ;  Vn'^T = W^T A~^T ;  Vn^T = Vn'^T diag(beta)   (see kkt_solve.py)
    O^T  = scale [(S0^T Q^T) diag(gamma) + Vn^T P^T],  P = Q K^T (.) Gamma
    S^T  = gamma_last S0^T + (Vn'^T diag(d beta)) K
With use_l2norm every K and Q product is rescaled by 1/||k||, 1/||q|| on its chunk rows (the norms of q
are computed from the shared tile, those of k come from kkt_solve), so no normalised copy is made.
Rows past the end of a sequence: a and v arrive by TMA from the next sequence's rows (finite: every row of
a is written by kkt_solve, cu_seqlens[-1] == T is validated), so their Vn columns are finite values that
d = 0 (kkt_solve's zero factor rows past each sequence) removes from the state and the masked Gamma removes
from O; they are never stored.

Tile plan: an item is a (sequence, value head of the launch's range, V block of `block_v`); num_ctas CTAs, CTA b
taking the items b, then 2 num_ctas - 1 - b, 2 num_ctas + b, ... (`item_index`: rounds of num_ctas items in
alternating directions, sequences in seq_table's order). Each warpgroup walks the CTA's items on its own, so the
producer loads the next item's first chunks and the auxiliary warpgroup forms their P while the state warpgroups
finish the item before: the stages and P's buffers run on across items (their barrier phases count the CTA's
chunks). Per CTA block_v / 64 "state" warpgroups, one auxiliary warpgroup and a producer warpgroup (threads =
128 (block_v / 64 + 2); setmaxnreg 192 / 192 / 104 / 24 at block_v 128, 208 / 160 / 24 at block_v 64):
    state WGs : S^T [block_v, K] fp32 in registers, rows split over the warpgroups (64 each). Every product
                has a register A operand (wgmma with A in registers: S^T, W^T, Vn^T and Vn^T d are converted
                to bf16 in place, their accumulator layout being the operand layout) and a shared B operand
                (k, q, A~, P): Z^T = S^T K^T, then (defer_o_store) the previous chunk's O^T leaves while it
                runs, then S^T Q^T, W^T on the CUDA cores (V^T by ldmatrix.trans) while S^T Q^T runs, Vn^T = W^T A~^T, then
                S^T += (Vn^T d) K and O^T += Vn^T P^T. The state never goes through shared memory; O^T
                leaves through a swizzled shared tile (written transposed by stmatrix.trans) by one TMA store a
                chunk (masked 16-byte row stores for a sequence's partial last chunk).
    aux WG    : P = (Q K^T) (.) Gamma with the row norms and scale folded in (the row factor scale / ||q_r||
                in the exponent; formed in registers in the input dtype, then copied in pairs into a
                double buffer in shared memory once the state has released it) and the output's row factor
                gamma_r scale / ||q_r||.
                With fused_inverse (block_v 128) it forms the chunk's A~ (`form_inverse`: K K^T, the inverse in
                an fp32 tile in place, the gate) into a double buffer handed over on an mbarrier, and without
                use_l2norm (p_on_state) only that: the state warpgroups then form P themselves, each the half of
                its columns (Q K^T issued before the state update, gated while the update runs, the halves met
                at a named barrier before O^T's product; O's row factor from derive_factors).
    producer  : TMA for q, k, v, a and the per-row factors (kkt_solve's rows) of the CTA's chunk gc into stage
                gc % NS as soon as the stage is released, nothing else (its warpgroup's first warp). q, k and v of
                the first item's first preload_stages chunks go out before the wait on kkt_solve's grid (pdl).
                Its warps 1 and 2 (`derive_factors`, a token a thread) form the state chain's column factors
                wf = exp(G) / ||k|| and uf = beta exp(G_last - G) / ||k|| of each landed stage into two more slots
                of its factor tile and hand them over on `fac_ready` (kkt_solve stored them until session 28: 24
                bytes a value-head token through HBM).
                merged_producer (the default where the auxiliary warpgroup forms the register inverse and the state
                P): no producer warpgroup (384 threads, setmaxnreg 192 / 192 / 120); the auxiliary warpgroup's
                first warp issues the loads of chunk c + 2 after its chunk c, its first C threads derive the
                factors, and it issues each chunk's K K^T during the chunk before (`inverse_loop_ahead`).
    item boundary (persistent grid): the state warpgroups read the next item's seq_table row at an item's start
                and load its h0 (prefetched into L2 by the producer) into registers of their own before storing
                the item's final state.
The loads run up to num_stages chunks ahead; mbarriers hand the stages and the buffers between the warpgroups, and
named barriers (P_READY_BARRIER_ID) the auxiliary warpgroup's P to the state warpgroups; w/u, the
deltas and the per-chunk states never leave the SM. The key-head index is computed once in int32.
Proxy fences are placed by hand (built with specs.manual_fences: TileLang's fence pass is skipped, because
a fence waits for every memory operation of its thread and the pass put one before every chunk's first wgmma):
one after the auxiliary warpgroup's P stores, one after the state's o_s stores before the TMA store. So are the
CTA barriers (specs.manual_syncs: TileLang's sync pass cannot see the mbarriers): named barriers around o_s (state
warpgroups) and rq_s (auxiliary warpgroup), and with fused_inverse around the inverse's tile; P's hand-over is
a named barrier too (`p_ready_arrive`), every other hand-over goes through an mbarrier.
"""


import tilelang
import tilelang.language as T

from .chunk_inverse import (CHUNK, SUB, XO_REGS, diag_block_inverse, gate_rows, row_of, solve_row_stripes,
                            solve_row_stripes_f16, store_diag_block, store_row_stripe)
from .a_tile import a_tile_layout, load_a_lower
from .inverse_regs import (XH_STRIDE, gate_lower, invert_diag, merge_32, merge_64, rows_times_upper, store_stripe,
                           tile_of)
from .kkt_solve import ROW_BETA, ROW_G, ROW_RK, factor_rows

L2NORM_EPS = 1e-6
QNORM_SLICE = 32  # q's squared norms are summed over K in slices of this width (registers of the aux WG)
O_BARRIER_ID = 12  # named barrier of the state threads around o_s (TileLang numbers its own from 1 upwards)
AUX_BARRIER_ID = 13  # named barrier of the auxiliary warpgroup around rq_s
INV_BARRIER_ID = 14  # named barrier of the auxiliary warpgroup around the inverse's shared tile (fused_inverse)
P_READY_BARRIER_ID = 9  # named barriers 9 and 10 (9 + c % 2): chunk c's P from the auxiliary to the state warpgroups
P_BARRIER_ID = 11  # named barrier of the state threads: both halves of P in p_s (p_on_state)
INV_EPILOGUE_BATCH = 8  # rows of the inverse a thread loads from shared memory before gating any of them


def accumulator_layout(rows: int, cols: int):
    """The state warpgroups' wgmma accumulator layout of a [rows, cols] tile (rows = V rows, 64 a warpgroup),
    which is also their bf16 A-operand layout: in warpgroup g, warp w holds rows 64 g + 16 w .. + 15; lane l
    rows l / 4 and l / 4 + 8 and the column pair 2 (l % 4), + 1 of every 8 columns; register
    4 (j / 8) + 2 ((i % 16) / 8) + j % 2. Used to give a fragment filled by hand (ldmatrix) that layout."""
    def thread(i, j):
        return 128 * (i // 64) + 32 * ((i % 64) // 16) + 4 * (i % 8) + (j % 8) // 2

    def index(i, j):
        return 4 * (j // 8) + 2 * ((i % 16) // 8) + j % 2

    return tilelang.layout.Fragment([rows, cols], forward_thread_fn=thread, forward_index_fn=index)


def chunk_fwd_program(dtype: str = "bfloat16", use_l2norm: bool = False, block_v: int = 128,
                      head_dim: int = 128, chunk_size: int = 64, num_stages: int = 3,
                      state_regs: int | None = None, aux_regs: int | None = None,
                      defer_o_store: bool | None = None, v_load: str = "ldsm", v_load_early: bool | None = None,
                      pdl: bool = True, sq_order: str | None = None, producer_regs: int = 24,
                      fused_inverse: bool | None = None, inverse_tf32x3: bool = False, inverse_f16: bool = True,
                      o_store: str = "stmatrix",
                      prefetch_h0: bool = True, persistent: bool = False, preload_stages: int = 1,
                      p_on_state: bool | None = None, inverse_form: str = "stripes",
                      merged_producer: bool | None = None):
    # defer_o_store: a chunk's O^T leaves (store_o) at the start of the next chunk, while that chunk's Z^T
    # product runs, instead of closing its own chunk. Default at block_v 128 only. Measured
    # (results/2026-11-23-h200-s8/o_store_ab): 27B-TP1 16384+16384 -2.3%, the reference row unchanged,
    # the block_v 64 rows 1-2% slower.
    # setmaxnreg: the state warpgroups grow to `state_regs` (inc), the others shrink to `aux_regs` and
    # `producer_regs` (dec). The pool is what the launch allocated (LAUNCH_REGS a thread: 512 threads x 128, 384 x
    # 168), so the warpgroups' sum is at most THREADS / 128 x LAUNCH_REGS; asking for more makes setmaxnreg.inc wait
    # forever.
    # preload_stages (with pdl): how many of the first item's stages get q, k and v before the wait on kkt_solve's
    # grid, i.e. during kkt_solve's last wave (the rest of the stage, a and the factor rows, after it)
    K = V = head_dim
    C, BV, NS = chunk_size, block_v, num_stages
    assert 0 <= preload_stages <= NS
    DEFER_O = block_v == 128 if defer_o_store is None else defer_o_store
    # v_load_early (ldsm): V^T's ldmatrix loads right after the stage's full wait instead of after S^T Q^T's
    # issue. Default at block_v 64 only. Measured (results/2026-11-24-h200-s11/v_early_ab): block_v 64 rows
    # 3-5% faster (fused part), block_v 128 rows 2-5% slower.
    V_EARLY = block_v == 64 if v_load_early is None else v_load_early
    # pdl: programmatic dependent launch. kkt_solve lets this grid launch once all of its CTAs have started and
    # passed their own wait on the grid before them, so here every input but kkt_solve's outputs (a, rows) is
    # complete when a CTA starts: the state warpgroups load h0 at once, and only the auxiliary warpgroup, whose
    # producer loads a and rows by TMA, waits for kkt_solve's grid (griddepcontrol.wait) before its first load.
    # sq_order: how long S^T Q^T (issued right after Z^T) overlaps the forming of W^T, i.e. how much of st_b is
    # live then. "overlap" (default at block_v 64): all of it runs on while W^T is formed (st_b, ot_f, z_f
    # and V^T/W^T all live: ptxas serialises every wgmma below state_regs 208). "wait": both products are waited
    # for before W^T (st_b dead by then). "split": S^T in bf16 as two K halves (st_h0, st_h1) and each product as
    # two commit groups of the same wgmma instructions in the same order, so S^T Q^T's first half is done, and st_h0
    # dead, before W^T while its second half runs on. "wait" and "split" fit state_regs 192 with no spill and no
    # serialisation (block_v 128, all four dtype/l2norm specs; ptxas of CUDA 13.0, sm_90a); every variant computes
    # the same values (the fp32 accumulation order is unchanged). "split" at 192 / aux 120 measured the same speed
    # as "overlap" at 208 / 88 (results/2026-11-24-h200-s14/beta_on_vn_split_ab): the budget of a 4-warpgroup kernel.
    # The producer warpgroup (v14 at block_v 128, session 19 at 64): the TMA producer is a warpgroup of its own (its first warp issues,
    # at setmaxnreg producer_regs), not the auxiliary warpgroup's first warp between two P's, so loads run as far
    # ahead as the stages allow and P's loop waits on nothing but its inputs and P's buffers. 512 threads launch
    # with 128 registers each: 2 state_regs + aux_regs + producer_regs <= 512 (FlashInfer's split: 2 x 192 + 104 +
    # 24), so the state warpgroups run sq_order "split" at 192 (defaults then: 192 / 104). Measured
    # (results/2026-11-24-h200-s14/producer_wg_ab): block_v 128 rows 1-3% less GPU time (graph replay), 2.5-5% less
    # eager time. (The former layout, the producer as the auxiliary warpgroup's first warp between two P's, was
    # removed in session 22 with the persistent item loop.)
    # At block_v 64 (session 19): 384 threads launch with 168 registers each; the single state warpgroup grows to 208
    # for sq_order "overlap", the auxiliary warpgroup shrinks to 160, the producer to producer_regs (ptxas: no spill
    # in the four specs), so that P's loop, which paces the block_v 64 step, no longer waits for a stage's release
    # before the next P. Measured (results/2026-11-25-h200-s19/v64_producer_ab, graph replay): block_v 64 rows 2-4%
    # less GPU time (27B-TP1 1x32768 0.914 / 0.921 vs 0.938 / 0.936 ms), outputs bitwise equal.
    FOUR_WG = block_v == 128
    sq_order = sq_order or ("split" if FOUR_WG else "overlap")
    state_regs = state_regs or (192 if FOUR_WG else 208)
    aux_regs_given = aux_regs
    # fused_inverse (default at block_v 128): the auxiliary warpgroup forms each chunk's gated inverse itself
    # (`form_inverse`, before P) into a double buffer handed to the state warpgroups on an mbarrier; kkt_solve
    # runs as its rows-only pass (solve=False) and `a` is neither loaded nor read (any valid pointer may be passed).
    # inverse_f16: its row stripes as fp16 m16n8k16 block products (chunk_inverse.solve_row_stripes_f16, kkt_solve
    # "mma16"'s; warp 3's dependent chain 9 mma instead of 18 tf32 ones): the fused chunk_fwd -3.5 to -4.5% on every
    # row timed (H100, results/2026-11-26-h100-s27/fused_f16_ab); False: 1xTF32 (or 3xTF32, inverse_tf32x3).
    fused_inverse = FOUR_WG if fused_inverse is None else fused_inverse
    # p_on_state (default with fused_inverse, without use_l2norm): P is formed by the state warpgroups (each one
    # half of its columns, Q K^T issued before the state update, gated while the update runs, both halves met at a
    # named barrier before O^T's product), so the auxiliary warpgroup, which paces the fused variant, forms only
    # the inverse. A leave-one-out on the H100 (results/2026-11-27-h100-s35/fused_aux_loo) put P's work at 20-25%
    # of the fused chunk_fwd. With use_l2norm P stays on the auxiliary warpgroup (q's row norms are formed there).
    P_ON_STATE = (fused_inverse and not use_l2norm) if p_on_state is None else p_on_state
    # inverse_form (fused_inverse): "stripes" (`form_inverse`: L in an fp32 tile, chunk_inverse.py's substitution and
    # row stripes, the gate afterwards, the same bits as kkt_solve "mma16") or "regs" (`form_inverse_regs`:
    # inverse_regs.py, the gate before the inverse, the row stripes in registers, merges by mma.sync; A~ differs from
    # kkt_solve's by rounding; the runtime's default, ops.INVERSE_FORM: the fused chunk_fwd -1 to -3.5%, session 38)
    assert inverse_form in ("stripes", "regs") and (fused_inverse or inverse_form == "stripes")
    REGS = fused_inverse and inverse_form == "regs"
    assert not (P_ON_STATE and use_l2norm)
    # merged_producer (default for the fused variant with the register inverse and P on the state warpgroups, one
    # item a CTA; `inverse_loop_ahead`): no producer warpgroup. The auxiliary warpgroup's first warp issues the TMA
    # loads (chunk c + 2 once its chunk c is done) and its first C threads derive the stage's factors while K K^T
    # runs; 384 threads launch with 168 registers each, so the auxiliary warpgroup gets 120 (2 x 192 + 120 = 3 x
    # 168) instead of 104. With them it issues chunk c + 1's K K^T during chunk c's inverse (before merge_64, where
    # K K^T's accumulator and L~ are dead), so that product's latency leaves its chain. Every such issue and its wait
    # are unconditional (the last chunk's issue reads its own stage again): issued on one branch and awaited on
    # another, ptxas serialised every wgmma of the kernel (C7518), which is what made session 42's try (and this
    # one's first) 6-13% slower. Measured (H100, results/2026-11-28-h100-s45/kk_ahead_v2_ab, bitwise the same
    # outputs): chunk_fwd 2B-TP1 1024x8 -3%, 35B-TP1 1024x8 -1.3%, 35B-TP1 8192x4 -0.2%; the merged layout without
    # the early K K^T was 0 to +2% (merged_producer_ab).
    MERGED = (FOUR_WG and REGS and P_ON_STATE and not persistent) if merged_producer is None else merged_producer
    assert not MERGED or (FOUR_WG and REGS and P_ON_STATE and not persistent)
    aux_regs = aux_regs_given or (120 if MERGED else 104 if FOUR_WG else 160)
    assert C == CHUNK
    # o_store: how the state warpgroups write O^T (accumulator layout) transposed into o_s for the TMA store:
    # "stmatrix" (stmatrix.trans: four 8 x 8 bf16 matrices an instruction, the pairs packed by one conversion each)
    # or "scalar" (one 2-byte shared store an element: 32 a thread a chunk)
    assert o_store in ("stmatrix", "scalar")
    PACK = "__pack_nv_bfloat162" if dtype == "bfloat16" else "__pack_half2"
    assert v_load in ("ldsm", "lds") and sq_order in ("overlap", "wait", "split")
    assert V % BV == 0 and BV % 64 == 0
    assert not persistent or BV == V  # the next item's h0 (state warpgroups) is decoded for one V block an item
    NVB = V // BV
    NSW = BV // 64                      # state warpgroups
    ST = 128 * NSW                      # state threads
    THREADS = ST + (128 if MERGED else 256)
    LAUNCH_REGS = 65536 // THREADS // 8 * 8  # registers a thread at launch (one CTA an SM): setmaxnreg's pool
    if MERGED:
        assert NSW * state_regs + aux_regs <= (NSW + 1) * LAUNCH_REGS
    else:
        assert NSW * state_regs + aux_regs + producer_regs <= (NSW + 2) * LAUNCH_REGS
    PT = ST + 128  # first thread of the producer warpgroup
    # a stage's factor tile: kkt_solve's R rows (one TMA box), then the two factors that derive_factors forms
    R = factor_rows(use_l2norm)
    F_WF, F_UF = R, R + 1
    F_OF = R + 2  # p_on_state: O's row factor gamma_j scale (the state's P needs no auxiliary warpgroup's of_s)
    FAC_SLOTS = R + 3 if P_ON_STATE else R + 2
    num_tokens = T.dynamic("num_tokens")
    rows_len = T.dynamic("rows_len")
    num_k_heads = T.dynamic("num_k_heads")
    num_v_heads = T.dynamic("num_v_heads")
    num_seqs_p1 = T.dynamic("num_seqs_p1")
    acc = "float32"
    full_row = T.GemmWarpPolicy.FullRow

    @T.macro
    def load_inputs(q, k, v, q_s, k_s, v_s, full, seq_start, hk, hv, v0, c, gc):
        """Producer warp (merged_producer: the auxiliary warpgroup's first warp): q, k and v of chunk c into stage
        gc % NS by TMA on the stage's full barrier (each copy adds its bytes to the barrier's transaction count; the
        warp's arrive comes with the chunk's last copy)."""
        st = gc % NS
        t0 = seq_start + c * C
        T.tma_copy(q[t0:t0 + C, hk, 0:K], q_s[st, :, :], barrier=full[st])
        T.tma_copy(k[t0:t0 + C, hk, 0:K], k_s[st, :, :], barrier=full[st])
        T.tma_copy(v[t0:t0 + C, hv, v0:v0 + BV], v_s[st, :, :], barrier=full[st])

    @T.macro
    def load_chunk(q, k, v, a, rows, q_s, k_s, v_s, a_s, fac_s, full, empty, seq_start, rows0, hk, hv, v0, c, gc,
                   load_qkv):
        """Producer warp (merged_producer: the auxiliary warpgroup's first warp): chunk c of the item into stage
        gc % NS (gc: the CTA's running chunk count, which orders the stages across its items) once the stage's
        previous chunk is released, all by TMA: q, k, v (if load_qkv, a Python bool or a run-time test: else
        they were issued before the wait on kkt_solve's grid, `load_inputs`), a and the chunk's factor rows
        (kkt_solve forms them; rows past a sequence's end are zeros, so d = 0 there)."""
        st = gc % NS
        t0 = seq_start + c * C
        T.barrier_wait(empty[st], (gc // NS + 1) % 2)
        if load_qkv:
            load_inputs(q, k, v, q_s, k_s, v_s, full, seq_start, hk, hv, v0, c, gc)
        if not fused_inverse:
            load_a_lower(a, a_s, full, t0, hv, st)  # the blocks on or below the diagonal (a_tile.py)
        T.tma_copy(rows[0:R, hv, rows0 + c * C:rows0 + (c + 1) * C], fac_s[st, 0:R, :], barrier=full[st])
        T.barrier_arrive(full[st])

    @T.macro
    def derive_factors(fac_s, fac_flat, full, fac_ready, fl_row, seq_start, seq_end, scale, c, gc, j,
                       wait_full=True):
        """Producer warpgroup's warps 1 and 2 (merged_producer: the auxiliary warpgroup's first C threads, after
        its own wait, wait_full False) (thread j = 0..C-1: token j), chunk c of the item (stage gc % NS): once
        the stage has landed, the state chain's column factors of token j from its factor rows into the stage's
        slots F_WF = exp2(G_j) rk_j and F_UF = exp2(G_last - G_j) rk_j beta_j (G in log2 units, G_last: the
        chunk's last token's; rk = 1/||k_j|| with use_l2norm, else 1), zero past the sequence's end; then
        `fac_ready`. The same operations in the same order as kkt_solve's former rows 2 and 3 (so the same
        bits), off every other warpgroup's path: the state warpgroups wait for them only before their W^T pass.
        With p_on_state also F_OF = exp2(G_j + log2(scale)), O's row factor (form_p's of_s, the same
        operations)."""
        st = gc % NS
        t0 = seq_start + c * C
        if wait_full:
            T.barrier_wait(full[st], (gc // NS) % 2)
        # G_last by a flat index held in int32 (fl_row[0]; inline, TileLang widened it to int64, as gl_row)
        fl_row[0] = st * (FAC_SLOTS * C) + ROW_G * C + T.min(C, seq_end - t0) - 1
        g_last = fac_flat[fl_row[0]]
        if P_ON_STATE:
            fac_s[st, F_OF, j] = T.exp2(fac_s[st, ROW_G, j] + T.log2(scale))
        if t0 + j < seq_end:
            if use_l2norm:
                fac_s[st, F_WF, j] = T.exp2(fac_s[st, ROW_G, j]) * fac_s[st, ROW_RK, j]
                fac_s[st, F_UF, j] = T.exp2(g_last - fac_s[st, ROW_G, j]) * fac_s[st, ROW_RK, j] * \
                    fac_s[st, ROW_BETA, j]
            else:
                fac_s[st, F_WF, j] = T.exp2(fac_s[st, ROW_G, j])
                fac_s[st, F_UF, j] = T.exp2(g_last - fac_s[st, ROW_G, j]) * fac_s[st, ROW_BETA, j]
        else:
            fac_s[st, F_WF, j] = 0.0
            fac_s[st, F_UF, j] = 0.0
        T.barrier_arrive(fac_ready[st])

    @T.macro
    def load_v_transposed(v_s, vt_b, st, tx):
        """State warpgroups: V^T of stage st into the fragment vt_b [BV, C], laid out as the wgmma accumulator
        (its element (i, j) = V[j, i] in the register that holds W^T[i, j]), by ldmatrix.trans: C / 16 x4 loads a
        thread instead of C BV / ST scalar 2-byte loads. Load m fills the thread's registers 8 m .. 8 m + 7, i.e.
        its elements (i, j) with j in [16 m, 16 m + 16), addressed through the element (own row, 16 m). Lane l
        points at the row 16 m + 8 (l / 16) + l % 8 of V, columns 64 g + 16 w + 8 ((l / 8) % 2) .. + 7, so the
        four 8 x 8 matrices of load m are (row half, column half) = (l / 16, (l / 8) % 2) in register order.
        TileLang's own shared -> fragment ldmatrix copy drops a dynamic region offset (the stage)."""
        lane = tx % 32
        for m in T.unroll(C // 16):
            T.call_extern("handle", "tl::ptx_ldmatrix_x4_trans",
                          T.address_of(v_s[st, 16 * m + 8 * (lane // 16) + lane % 8,
                                           64 * (tx // 128) + 16 * ((tx % 128) // 32) + 8 * ((lane // 8) % 2)]),
                          T.address_of(vt_b[64 * (tx // 128) + 16 * ((tx % 128) // 32) + lane // 4, 16 * m]))

    @T.macro
    def gate_p(pb, qk, gr, gq, t0, seq_end):
        """P = (Q K^T) (.) Gamma from Q K^T (qk) and the exponent's row and column terms gr, gq (log2 units): masked
        to j <= i and to rows before the sequence's end, in the input dtype. The auxiliary warpgroup's form_p and the
        state warpgroups' p_on_state both form P by it, so the fused and split paths keep the same bits."""
        for i, j in T.Parallel(C, C):
            pb[i, j] = T.if_then_else((j <= i) & (t0 + i < seq_end), qk[i, j] * T.exp2(gr[i] - gq[j]), 0.0)

    @T.macro
    def p_ready_arrive(pb):
        """Auxiliary warpgroup: P of chunk c (buffer pb = c % 2) is in p_s, fenced for the wgmma reads: it arrives on
        named barrier P_READY_BARRIER_ID + pb, on which the state warpgroups wait (`p_ready_wait`). A named barrier
        and not an mbarrier: the state warpgroups then wait in bar.sync, issuing nothing, where an mbarrier wait polls
        (try_wait in a loop). Measured (H100, split path, results/2026-11-28-h100-s44/p_ready_named_ab): chunk_fwd
        -5.6% on 397B-TP1 8192x4 and -7.6% on 397B-TP2 8192x4, the GVA-1/2 rows unchanged. One arrival a chunk a
        barrier at a time: the auxiliary warpgroup writes P of chunk c + 2 into the same buffer only after p_used says
        the state warpgroups are done with chunk c, i.e. past their wait for it; the proxy fence before the arrival
        (MEMBAR) orders P's stores before it."""
        T.call_extern("handle", "flashqla_bar_arrive", P_READY_BARRIER_ID + pb, 128 + ST)

    @T.macro
    def p_ready_wait(pb):
        """State warpgroups: wait for P of the chunk whose buffer is pb (`p_ready_arrive`)."""
        T.call_extern("handle", "flashqla_bar_sync", P_READY_BARRIER_ID + pb, 128 + ST)

    @T.macro
    def form_p(q_s, k_s, fac_s, p_s, of_s, rq_s, p_f, qq_f, qn_f, gr_f, pb_f, gq_f, full, empty, p_used,
               seq_start, seq_end, scale, c, gc, pu):
        """Auxiliary warpgroup, chunk c of the item (stage gc % NS): P = (Q K^T) (.) Gamma with the row/column
        factors folded in (bf16) and the output's row factor into the double buffer c % 2 (pu: that buffer's
        uses by the CTA's earlier items, which offsets its barriers' phases), fenced for the state warpgroups'
        wgmma; then the stage's and P's barriers."""
        st = gc % NS
        pb = c % 2
        t0 = seq_start + c * C
        T.barrier_wait(full[st], (gc // NS) % 2)
        T.gemm(q_s[st, :, :], k_s[st, :, :], p_f, transpose_B=True, clear_accum=True)
        # the gate and norm factors of the thread's rows and columns into registers once (read per
        # element from shared memory they were 4 loads an element, half of this warpgroup's time)
        for j in T.Parallel(C):
            if use_l2norm:  # 1/||k_j|| enters the exponent (log2 of it <= 10 for eps 1e-6)
                gq_f[j] = fac_s[st, ROW_G, j] - T.log2(fac_s[st, ROW_RK, j])
            else:
                gq_f[j] = fac_s[st, ROW_G, j]
        if use_l2norm:
            T.clear(qn_f)
            for kb in T.serial(K // QNORM_SLICE):
                for i, j in T.Parallel(C, QNORM_SLICE):
                    qq_f[i, j] = q_s[st, i, kb * QNORM_SLICE + j] * q_s[st, i, kb * QNORM_SLICE + j]
                T.reduce_sum(qq_f, qn_f, dim=1, clear=False)
            # rq_s hands the row norms from the reduction's layout to P's; the kernel is lowered without
            # TileLang's sync pass (specs.manual_syncs), so both hazards are fenced here: the previous chunk's
            # reads before the writes, the writes before the reads
            T.sync_threads(AUX_BARRIER_ID, 128)
            for i in T.Parallel(C):
                rq_s[i] = T.rsqrt(qn_f[i] + L2NORM_EPS) * scale
            T.sync_threads(AUX_BARRIER_ID, 128)
            for i in T.Parallel(C):
                gr_f[i] = fac_s[st, ROW_G, i] + T.log2(rq_s[i])
        else:
            for i in T.Parallel(C):
                gr_f[i] = fac_s[st, ROW_G, i] + T.log2(scale)
        # the row factor (scale / ||q_i||) rides in the exponent (gr_i = log2(gamma_i scale / ||q_i||)): one
        # FMUL and a reload of `scale` less an element. P goes to registers in the input dtype first and to
        # shared memory by a copy in pairs (the element loop's exp2 kept it from vectorising: 2-byte stores),
        # so only that copy waits for the state to release P's buffer.
        gate_p(pb_f, p_f, gr_f, gq_f, t0, seq_end)
        T.barrier_wait(p_used[pb], (pu + c // 2 + 1) % 2)
        T.copy(pb_f, p_s[pb, :, :])
        for i in T.Parallel(C):
            of_s[pb, i] = T.exp2(gr_f[i])
        T.fence_proxy_async()  # generic-proxy stores of P -> the state warpgroups' wgmma reads
        p_ready_arrive(pb)
        T.barrier_arrive(empty[st])

    @T.macro
    def form_inverse(k_s, fac_s, fac_flat, lx_s, a_s, kk_f, rb_f, cn_f, col, xo, tt, a_f, b_f, ah, al, bh, bl, xa, th,
                     bq, bf, x_b,
                     g_b, o_b, col_g, full, p_used, a_ready, seq_start, seq_end, c, gc, pu, ta):
        """Auxiliary warpgroup (fused_inverse), chunk c: the gated inverse A~ = (I + L)^-1 (.) Gamma with
        L = strict_lower(K K^T diag(beta)) (rows past the sequence's end masked) into a_s[c % 2], as kkt_solve
        "mma16" forms it (with inverse_f16, the default; "mma" without: the same operations in the same order, so
        A~ is bitwise that kkt_solve's on every stored row):
        K K^T by one wgmma, L to the fp32 tile lx_s (blocks on or below the diagonal), the diagonal blocks'
        inverses written over L's diagonal blocks, the row stripes' blocks (chunk_inverse.py) over L's blocks
        below the diagonal, then the gate Gamma_ij = exp(G_i - G_j) and the rounding to the input dtype. ta: the
        thread's index in the warpgroup. Named barriers (INV_BARRIER_ID) order the in-place steps on lx_s."""
        st = gc % NS
        pb = c % 2
        t0 = seq_start + c * C
        T.barrier_wait(full[st], (gc // NS) % 2)
        T.gemm(k_s[st, :, :], k_s[st, :, :], kk_f, transpose_B=True, clear_accum=True)
        if use_l2norm:  # row factor 1/||k_i||, column factor beta_j / ||k_j|| (kkt_solve's rows ROW_RK, ROW_BETA)
            for i in T.Parallel(C):
                rb_f[i] = fac_s[st, ROW_RK, i]
            for j in T.Parallel(C):
                cn_f[j] = fac_s[st, ROW_BETA, j] * fac_s[st, ROW_RK, j]
            for i, j in T.Parallel(C, C):
                kk_f[i, j] = T.if_then_else((j < i) & (t0 + i < seq_end), kk_f[i, j] * rb_f[i] * cn_f[j], 0.0)
        else:
            for j in T.Parallel(C):
                cn_f[j] = fac_s[st, ROW_BETA, j]
            for i, j in T.Parallel(C, C):
                kk_f[i, j] = T.if_then_else((j < i) & (t0 + i < seq_end), kk_f[i, j] * cn_f[j], 0.0)
        T.sync_threads(INV_BARRIER_ID, 128)  # the previous chunk's epilogue has read lx_s
        for i, j in T.Parallel(C, C):
            if j // SUB <= i // SUB:
                lx_s[i, j] = kk_f[i, j]
        T.sync_threads(INV_BARRIER_ID, 128)
        if ta < C:
            diag_block_inverse(lx_s, col, ta)
        T.sync_warp()  # a diagonal block is read and rewritten by one warp only (threads 16 b .. 16 b + 15)
        if ta < C:
            store_diag_block(lx_s, col, ta)
        T.sync_threads(INV_BARRIER_ID, 128)
        if inverse_f16:  # fp16 m16n8k16 block products, as kkt_solve "mma16" (warp 3: 9 dependent mma, not 18)
            solve_row_stripes_f16(lx_s, lx_s, xo, tt, xa, th, bq, bf, ta)
        else:
            solve_row_stripes(lx_s, lx_s, xo, tt, a_f, b_f, ah, al, bh, bl, ta, inverse_tf32x3)
        T.sync_threads(INV_BARRIER_ID, 128)  # every read of L's blocks below the diagonal is done
        store_row_stripe(lx_s, xo, ta)
        T.sync_threads(INV_BARRIER_ID, 128)
        T.barrier_wait(p_used[pb], (pu + c // 2 + 1) % 2)  # the state warpgroups are done with a_s[pb] (chunk c - 2)
        # kkt_solve's epilogue (G = row 0 of the stage's factor rows) into a_s[pb]
        gate_rows(lx_s, fac_flat, st * (FAC_SLOTS * C) + ROW_G * C, a_s, pb, x_b, g_b, o_b, col_g, ta,
                  INV_EPILOGUE_BATCH, dtype)
        T.fence_proxy_async()  # generic-proxy stores of A~ -> the state warpgroups' wgmma reads
        T.barrier_arrive(a_ready[pb])

    @T.macro
    def form_inverse_regs(k_s, fac_s, xh_s, a_s, kk_f, lr, sr, gr, gcol, bcol, full, p_used, a_ready, seq_start,
                          seq_end, c, gc, pu, ta, fac_flat=None, fac_ready=None, fl_row=None, scale=None,
                          n_chunks=0):
        """Auxiliary warpgroup (fused_inverse, inverse_form "regs"), chunk c: A~ = (I + L~)^-1 with the gate in L~
        (inverse_regs.py) into a_s[c % 2]: K K^T by one wgmma, L~ from its accumulator into registers, the inverse
        by steps A..D (named barriers INV_BARRIER_ID between them, every cross-warp operand through xh_s), then the
        row stripes' blocks on or below the diagonal to a_s once the state warpgroups are done with it (chunk c - 2).
        merged_producer: K K^T was issued during chunk c - 1 (`inverse_loop_ahead`); the first C threads derive the
        stage's factors (derive_factors) before its wait, and chunk c + 1's K K^T is issued before merge_64."""
        st = gc % NS
        pb = c % 2
        t0 = seq_start + c * C
        if MERGED:  # K K^T was issued during the chunk before (or before the loop); the stage's factors
            # (derive_factors) by the first C threads while it runs
            if ta < C:
                derive_factors(fac_s, fac_flat, full, fac_ready, fl_row, seq_start, seq_end, scale, c, gc, ta,
                               wait_full=False)
            T.wait_wgmma(0)
        else:
            T.barrier_wait(full[st], (gc // NS) % 2)
            T.gemm(k_s[st, :, :], k_s[st, :, :], kk_f, transpose_B=True, clear_accum=True)
        gate_lower(kk_f, lr, row_of(fac_s, st, ROW_G), row_of(fac_s, st, ROW_BETA),
                   row_of(fac_s, st, ROW_RK) if use_l2norm else None, t0, seq_end, ta, gr, gcol, bcol)
        T.sync_threads(INV_BARRIER_ID, 128)  # the previous chunk's readers of xh_s are done
        invert_diag(lr, sr, xh_s, ta)
        T.sync_threads(INV_BARRIER_ID, 128)
        merge_32(lr, sr, xh_s, ta)
        T.sync_threads(INV_BARRIER_ID, 128)
        rows_times_upper(lr, xh_s, ta)
        T.sync_threads(INV_BARRIER_ID, 128)
        if MERGED:  # the next chunk's K K^T runs under merge_64 (kk_f and lr are dead here)
            if c + 1 < n_chunks:
                T.barrier_wait(full[(gc + 1) % NS], ((gc + 1) // NS) % 2)
            T.wgmma_gemm(k_s[T.if_then_else(c + 1 < n_chunks, (gc + 1) % NS, st), :, :],
                         k_s[T.if_then_else(c + 1 < n_chunks, (gc + 1) % NS, st), :, :], kk_f, transpose_B=True,
                         clear_accum=True)
        merge_64(sr, xh_s, ta)
        T.barrier_wait(p_used[pb], (pu + c // 2 + 1) % 2)  # the state warpgroups are done with a_s[pb] (chunk c - 2)
        store_stripe(sr, tile_of(a_s, pb), ta, PACK, dtype)
        T.fence_proxy_async()  # generic-proxy stores of A~ -> the state warpgroups' wgmma reads
        T.barrier_arrive(a_ready[pb])

    @T.macro
    def inverse_loop_ahead(q, k, v, a, rows, q_s, k_s, v_s, a_s, fac_s, fac_flat, xh_s, kk_f, lr, sr, gr, gcol, bcol,
                           full, empty, p_used, a_ready, fac_ready, fl_row, seq_start, seq_end, n_chunks, rows0, hk,
                           hv, v0, scale, ta):
        """Auxiliary warpgroup with merged_producer (one item a CTA; chunks 0 and 1 already loaded): chunk 0's K K^T
        (issued unconditionally, see merged_producer), then every chunk's inverse, the stage's release and chunk c + 2's
        loads by the first warp. A plain chunk loop: the pair-unrolled one's `c < n_chunks` branch would separate a
        K K^T's issue from its wait."""
        if n_chunks > 0:
            T.barrier_wait(full[0], 0)
        T.wgmma_gemm(k_s[0, :, :], k_s[0, :, :], kk_f, transpose_B=True, clear_accum=True)
        for c in T.serial(n_chunks):
            form_inverse_regs(k_s, fac_s, xh_s, a_s, kk_f, lr, sr, gr, gcol, bcol, full, p_used, a_ready, seq_start,
                              seq_end, c, c, 0, ta, fac_flat, fac_ready, fl_row, scale, n_chunks)
            T.barrier_arrive(empty[c % NS])
            if (ta < 32) & (c + 2 < n_chunks):  # chunk c + 2 into the stage of chunk c - 1
                load_chunk(q, k, v, a, rows, q_s, k_s, v_s, a_s, fac_s, full, empty, seq_start, rows0, hk, hv, v0,
                           c + 2, c + 2, True)
        T.wait_wgmma(0)

    @T.macro
    def p_loop_by_pairs(q_s, k_s, fac_s, p_s, of_s, rq_s, p_f, qq_f, qn_f, gr_f, pb_f, gq_f, full, empty, p_used,
                        seq_start, seq_end, scale, n_chunks, base, pu0, pu1):
        """Auxiliary warpgroup: P for every chunk of the item, two chunks a step (c % 2, P's buffer, is a constant
        in each copy; base: the CTA's chunks before the item, pu0 / pu1: the buffers' uses before it)."""
        for c2 in T.serial(T.ceildiv(n_chunks, 2)):
            for par in T.unroll(2):
                c = 2 * c2 + par
                if c < n_chunks:
                    form_p(q_s, k_s, fac_s, p_s, of_s, rq_s, p_f, qq_f, qn_f, gr_f, pb_f, gq_f, full, empty, p_used,
                           seq_start, seq_end, scale, c, base + c, pu0 if par == 0 else pu1)

    def rows_start(seq_start, n):
        """The first factor row of sequence n (kkt_solve's layout, ops.rows_start: 16-byte aligned for TMA, and a gap
        of C zero rows after each sequence, so a partial last chunk's rows past the end read zeros)."""
        return (seq_start + 3) // 4 * 4 + C * n

    def item_rounds(num_items, num_ctas):
        """A warpgroup's loop over the rounds of items (a fresh iterator each call): ceil(num_items / num_ctas) on a
        persistent grid; with a CTA an item one round and no loop in the generated code."""
        return T.serial(T.ceildiv(num_items, num_ctas)) if persistent else range(1)

    def qkv_due(it, c):
        """Whether the producer still loads q, k, v of chunk c in round it: not for the first item's first
        preload_stages chunks, which were issued before the wait on kkt_solve's grid (pdl)."""
        if not pdl or preload_stages == 0:
            return True
        return (it > 0) | (c >= preload_stages) if persistent else c >= preload_stages

    def item_index(it, bid, num_ctas):
        """The item of CTA bid in round it: rounds alternate their direction (item it num_ctas + bid in even rounds,
        + num_ctas - 1 - bid in odd ones), so that with sequences sorted longest first (seq_table) no CTA takes the
        longest item of every round."""
        return it * num_ctas + T.if_then_else(it % 2 == 0, bid, num_ctas - 1 - bid)

    @T.macro
    def item_of(seq_table, cu_seqlens, p, persistent, launch_heads, hv_base, n, hv, hk, seq_start, seq_end):
        """Item p -> its sequence n and token range, value head and key head (one int32 division, not a 64-bit one
        inlined into every index), into the one-element local arrays given; the V block is p % NVB. On a
        persistent grid the i = p / (NVB launch_heads)-th sequence in seq_table's order (one row: no dependent
        second load); with a CTA an item sequence i itself, whose n needs no load, so the state warpgroups' h0
        loads start at once, as before the item loop. (NVB launch_heads is never named: at NVB = 1 the name would
        rename the argument.)"""
        n[0] = p // (NVB * launch_heads)  # in int32 (inlined into the table's index it became a 64-bit division)
        if persistent:
            seq_start[0] = seq_table[n[0], 1]
            seq_end[0] = seq_table[n[0], 2]
            n[0] = seq_table[n[0], 0]
        else:
            seq_start[0] = cu_seqlens[n[0]]
            seq_end[0] = cu_seqlens[n[0] + 1]
        hv[0] = hv_base + (p % (NVB * launch_heads)) // NVB
        hk[0] = hv[0] // (num_v_heads // num_k_heads)

    @T.macro
    def state_times(st_b, st_h0, st_h1, x_s, st, acc_f):
        """State warpgroups: acc_f = S^T X^T for stage st of x_s [NS, C, K] (k or q), from S^T in bf16: one wgmma
        group, or with sq_order "split" two groups over the K halves (the same instructions in the same order)."""
        if sq_order == "split":
            T.wgmma_gemm(st_h0, x_s[st, :, 0:K // 2], acc_f, transpose_B=True, clear_accum=True, policy=full_row)
            T.wgmma_gemm(st_h1, x_s[st, :, K // 2:K], acc_f, transpose_B=True, clear_accum=False, policy=full_row)
        else:
            T.wgmma_gemm(st_b, x_s[st, :, :], acc_f, transpose_B=True, clear_accum=True, policy=full_row)

    def packed_pair(frag, r, c):
        """Elements (r, c) and (r, c + 1) of an fp32 fragment, rounded to the input dtype and packed into 32 bits."""
        return T.call_extern("uint32", PACK, T.cast(frag[r, c], dtype), T.cast(frag[r, c + 1], dtype))

    @T.macro
    def store_o_transposed(o_s, ot_f):
        """State warpgroups: o_s[t, v] = O^T[v, t] in the input dtype by stmatrix.trans. In the accumulator layout
        (`accumulator_layout`) lane l of warp w in warpgroup g holds rows v = 64 g + 16 w + l / 4 (+ 8) and the column
        pairs t = 8 q + 2 (l % 4), + 1, i.e. the mma fragment of the 8 x 8 matrices (h, q) = (row half, column
        octet); stmatrix.trans writes each transposed, row t of o_s getting the matrix's 8 values of v (16 bytes).
        Instruction m2 stores the matrices (0, 2 m2), (1, 2 m2), (0, 2 m2 + 1), (1, 2 m2 + 1); lane l gives the
        address of row l % 8 of matrix l / 8. Rounds as the scalar path (round to nearest), so the same bits."""
        tx = T.get_thread_binding()
        lane = tx % 32
        v_base = 64 * (tx // 128) + 16 * ((tx % 128) // 32)  # the warp's first row of O^T
        rv = v_base + lane // 4
        ct = 2 * (lane % 4)
        for m2 in T.unroll(C // 16):
            T.call_extern(
                "handle", "tl::ptx_stmatrix_x4_trans",
                T.address_of(o_s[16 * m2 + 8 * (lane // 16) + lane % 8, v_base + 8 * ((lane // 8) % 2)]),
                packed_pair(ot_f, rv, 16 * m2 + ct), packed_pair(ot_f, rv + 8, 16 * m2 + ct),
                packed_pair(ot_f, rv, 16 * m2 + 8 + ct), packed_pair(ot_f, rv + 8, 16 * m2 + 8 + ct))

    @T.macro
    def store_o(o, o_s, ot_f, t0, seq_end, hv, v0):
        """State warpgroups: the O^T of the chunk starting at token t0 -> o_s (transposed) -> global. A full
        chunk leaves by one TMA store that nobody waits for until o_s is rewritten a chunk later; a sequence's
        partial last chunk by masked row stores (a TMA box would write into the next sequence's rows)."""
        T.tma_store_wait()  # the previous chunk's store has read o_s
        T.sync_threads(O_BARRIER_ID, ST)
        if o_store == "stmatrix":
            store_o_transposed(o_s, ot_f)
        else:
            for i, j in T.Parallel(BV, C):
                o_s[j, i] = ot_f[i, j]
        T.fence_proxy_async()  # generic writes of o_s -> the TMA engine's reads
        T.sync_threads(O_BARRIER_ID, ST)
        if t0 + C <= seq_end:
            T.tma_copy(o_s, o[t0:t0 + C, hv, v0:v0 + BV])
        else:
            for i, j in T.Parallel(C, BV):
                if t0 + i < seq_end:
                    o[t0 + i, hv, v0 + j] = o_s[i, j]

    @T.prim_func
    def chunk_fwd(
        q: T.Tensor((num_tokens, num_k_heads, K), dtype),
        k: T.Tensor((num_tokens, num_k_heads, K), dtype),
        v: T.Tensor((num_tokens, num_v_heads, V), dtype),
        rows: T.Tensor((R, num_v_heads, rows_len), acc),
        a: T.Tensor((num_tokens, num_v_heads, C), dtype),
        h0: T.Tensor((num_seqs_p1, num_v_heads, K, V), acc),
        ht: T.Tensor((num_seqs_p1, num_v_heads, K, V), acc),
        cu_seqlens: T.Tensor((num_seqs_p1,), "int32"),
        o: T.Tensor((num_tokens, num_v_heads, V), dtype),
        scale: T.float32,
        flags: T.int32,
        hv_base: T.int32,
        launch_heads: T.int32,
        seq_table: T.Tensor((num_seqs_p1, 4), "int32"),
        num_ctas: T.int32,
    ):
        # items: (sequence, value head of [hv_base, hv_base + launch_heads) (all of them, or one part of a head
        # split, see dispatch.py), V block); CTA b takes the items of `item_index` (one each when num_ctas is the
        # item count, several when it is smaller: a persistent grid)
        num_items = NVB * launch_heads * (num_seqs_p1 - 1)
        with T.Kernel(num_ctas, threads=THREADS) as bid:
            # stages filled by the producer
            q_s = T.alloc_shared((NS, C, K), dtype)
            k_s = T.alloc_shared((NS, C, K), dtype)
            v_s = T.alloc_shared((NS, C, BV), dtype)
            # A~: loaded by stage, or (fused_inverse) formed by the auxiliary warpgroup into a double buffer
            a_s = T.alloc_shared((2 if fused_inverse else NS, C, C), dtype)
            # per row: kkt_solve's rows (TMA; G, beta_r (Vn = Vn' diag(beta), O's operand), 1/||k|| with l2norm),
            # then derive_factors' gamma_r rk_r (F_WF: column factor of S^T K^T in W^T) and d_r rk_r beta_r (F_UF:
            # column factor of Vn'^T in S^T); all zero past the sequence's end
            fac_s = T.alloc_shared((NS, FAC_SLOTS, C), acc)
            fac_flat = T.view(fac_s, (NS * FAC_SLOTS * C,), acc)
            # handed from the auxiliary warpgroup to the state warpgroups (double-buffered)
            p_s = T.alloc_shared((2, C, C), dtype)
            of_s = T.alloc_shared((2, C), acc)       # gamma_r rq_r scale: column factor of S^T Q^T in O^T
            rq_s = T.alloc_shared((C,), acc)         # scale / ||q_r|| (or scale)
            o_s = T.alloc_shared((C, BV), dtype)     # O leaves through shared memory (TMA store)
            if REGS:
                xh_s = T.alloc_shared((C, XH_STRIDE), "float16")  # the inverse's cross-warp operands (fp16)
                kk_f = T.alloc_fragment((C, C), acc)
                T.annotate_layout({kk_f: accumulator_layout(C, C)})  # read by (row, column) in gate_lower
                lr = T.alloc_local((C * C // 128,), acc)  # L~'s row stripe (inverse_regs.py's register order)
                sr = T.alloc_local((C * C // 128,), acc)  # the inverse's row stripe
                gr = T.alloc_local((2,), acc)
                gcol = T.alloc_local((16,), acc)
                bcol = T.alloc_local((16,), acc)
            elif fused_inverse:
                # L, then the inverse in place (fp32, rows padded to 72 floats: the mma fragments' loads and
                # stores of a half-warp land on distinct banks)
                lx_s = T.alloc_shared((C, C + 8), acc)
                kk_f = T.alloc_fragment((C, C), acc)
                rb_f = T.alloc_fragment((C,), acc)
                cn_f = T.alloc_fragment((C,), acc)
                col = T.alloc_local((SUB,), acc)
                xo = T.alloc_local((XO_REGS,), acc)
                tt = T.alloc_local((8,), acc)
                a_f = T.alloc_local((4,), acc)
                b_f = T.alloc_local((2,), acc)
                ah = T.alloc_local((4,), "uint32")
                al = T.alloc_local((4,), "uint32")
                bh = T.alloc_local((2,), "uint32")
                bl = T.alloc_local((2,), "uint32")
                xa = T.alloc_local((8 * 4,), "float16")  # inverse_f16: the stripes' fp16 A fragments
                th = T.alloc_local((8,), "float16")
                bq = T.alloc_local((4,), "float16")
                bf = T.alloc_local((8,), acc)
                x_b = T.alloc_local((2 * INV_EPILOGUE_BATCH,), acc)
                g_b = T.alloc_local((INV_EPILOGUE_BATCH,), acc)
                o_b = T.alloc_local((2,), dtype)
                col_g = T.alloc_local((2,), acc)
            # v (read transposed for W^T) and o (written transposed from O^T) are not wgmma operands:
            # swizzle them so those accesses spread over the banks
            T.annotate_layout({v_s: tilelang.layout.make_swizzled_layout(v_s),
                               o_s: tilelang.layout.make_swizzled_layout(o_s)})
            if REGS or not fused_inverse:
                # A~ by SUB-wide column blocks (32-byte swizzle): column block cb is one contiguous region, whose
                # rows from SUB cb on (the blocks on or below the diagonal) one TMA box fills; the rows above stay
                # zero (set once below), so kkt_solve neither stores nor this kernel loads A~'s upper blocks
                T.annotate_layout({a_s: a_tile_layout(a_s)})

            st_f = T.alloc_fragment((BV, K), acc)     # S^T
            if persistent:
                # the next item's S^T (h0), loaded at the end of an item (live only across the item boundary)
                h0_f = T.alloc_fragment((BV, K), acc)
                nx_state = T.alloc_local((2,), "int32")  # its (sequence, value head) in h0; value head -1: none
            # S^T in bf16 (the A operand of Z^T and S^T Q^T): whole, or by K halves with sq_order "split"
            st_b = st_h0 = st_h1 = None
            if sq_order == "split":
                st_h0 = T.alloc_fragment((BV, K // 2), dtype)
                st_h1 = T.alloc_fragment((BV, K // 2), dtype)
            else:
                st_b = T.alloc_fragment((BV, K), dtype)
            z_f = T.alloc_fragment((BV, C), acc)      # S^T K^T, then Vn'^T
            w_b = T.alloc_fragment((BV, C), dtype)    # W^T, then Vn'^T diag(uf) (uf carries beta)
            fw_f = T.alloc_fragment((C,), acc)        # the column factors of Vn'^T diag(uf), loaded while Vn^T runs
            vn_b = T.alloc_fragment((BV, C), dtype)   # Vn^T = Vn'^T diag(beta), O's operand
            vt_b = T.alloc_fragment((BV, C), dtype)   # V^T by ldmatrix.trans, laid out as W^T
            if v_load == "ldsm":
                T.annotate_layout({vt_b: accumulator_layout(BV, C)})
            ot_f = T.alloc_fragment((BV, C), acc)     # O^T
            if o_store == "stmatrix":  # read by (row, column) in store_o_transposed: the wgmma layout, stated
                T.annotate_layout({ot_f: accumulator_layout(BV, C)})
            p_f = T.alloc_fragment((C, C), acc)
            qq_f = T.alloc_fragment((C, QNORM_SLICE), acc)
            qn_f = T.alloc_fragment((C,), acc)
            gr_f = T.alloc_fragment((C,), acc)        # log2(gamma scale / ||q||) by row of P
            pb_f = T.alloc_fragment((C, C), dtype)    # P in the input dtype, before its copy to p_s
            gq_f = T.alloc_fragment((C,), acc)        # log2-scaled G (less log2(1/||k||)) by column
            if P_ON_STATE:  # P by the state warpgroups, each a half of its columns
                sp_f = T.alloc_fragment((C, C), acc)
                spb_f = T.alloc_fragment((C, C), dtype)
                sgr_f = T.alloc_fragment((C,), acc)
                sgq_f = T.alloc_fragment((C,), acc)
            gl = T.alloc_var(acc)                       # gamma_last of the state warpgroups' chunk
            gl_row = T.alloc_var("int32")               # flat index of the chunk's last G in fac_s
            fl_row = T.alloc_local((1,), "int32")       # the same for derive_factors (producer warpgroup)

            full = T.alloc_barrier(arrive_count=[32] * NS)
            fac_ready = T.alloc_barrier(arrive_count=[C] * NS)  # derive_factors' slots of stage st are written
            empty = T.alloc_barrier(arrive_count=[ST + 128] * NS)
            p_used = T.alloc_barrier(arrive_count=[ST, ST])  # also releases a_s[c % 2] with fused_inverse
            if fused_inverse:
                a_ready = T.alloc_barrier(arrive_count=[128, 128])
            # the current item (item_of), per thread; each warpgroup walks the CTA's items on its own
            it_n = T.alloc_local((1,), "int32")
            it_hv = T.alloc_local((1,), "int32")
            it_hk = T.alloc_local((1,), "int32")
            it_start = T.alloc_local((1,), "int32")
            it_end = T.alloc_local((1,), "int32")
            p = T.alloc_var("int32")
            # the CTA's chunks before the item (stage gc = base + c) and the uses of P's buffers 0 / 1 before it
            # (constants 0 with a CTA an item: that kernel's indices are the single-item kernel's)
            base = pu0 = pu1 = 0
            if persistent:
                base = T.alloc_var("int32")
                pu0 = T.alloc_var("int32")
                pu1 = T.alloc_var("int32")

            tx = T.get_thread_binding()

            if REGS or not fused_inverse:
                # A~'s blocks above the diagonal: zeros for every stage or buffer, written once (no TMA box and no
                # stripe store covers them)
                for s_, i, j in T.Parallel(2 if fused_inverse else NS, C, C):
                    if j // SUB > i // SUB:
                        a_s[s_, i, j] = T.cast(0, dtype)
                T.fence_proxy_async()  # generic-proxy zeros -> the state warpgroups' wgmma reads
                T.sync_threads()

            if tx < ST:
                # ------------------------------------------------------------- state warpgroups
                T.set_max_nreg(state_regs, 1)
                if persistent:
                    base = 0
                    pu0 = 0
                    pu1 = 0
                    T.clear(h0_f)
                for it in item_rounds(num_items, num_ctas):
                    p = item_index(it, bid, num_ctas) if persistent else bid
                    if (p < num_items) if persistent else True:
                        item_of(seq_table, cu_seqlens, p, persistent, launch_heads, hv_base, it_n, it_hv,
                                it_hk, it_start, it_end)
                        n = it_n[0]
                        hv = it_hv[0]
                        v0 = (p % NVB) * BV
                        seq_start = it_start[0]
                        seq_end = it_end[0]
                        n_chunks = T.ceildiv(seq_end - seq_start, C)
                        if flags % 2 == 1:
                            if persistent:  # past the first round h0 arrived during the item before (h0_f)
                                if it > 0:
                                    for i, j in T.Parallel(BV, K):
                                        st_f[i, j] = h0_f[i, j]
                                else:
                                    for i, j in T.Parallel(BV, K):
                                        st_f[i, j] = h0[n, hv, j, v0 + i]
                                # the CTA's next item's initial state (its seq_table row is read now, so the load's
                                # latency passes during this item's chunks)
                                nx_state[1] = -1
                                if item_index(it + 1, bid, num_ctas) < num_items:
                                    nx_p = item_index(it + 1, bid, num_ctas)
                                    nx_state[0] = nx_p // launch_heads  # its seq_table row (int32 division)
                                    nx_state[0] = seq_table[nx_state[0], 0]
                                    nx_state[1] = hv_base + nx_p % launch_heads
                            else:
                                for i, j in T.Parallel(BV, K):
                                    st_f[i, j] = h0[n, hv, j, v0 + i]
                        else:
                            T.clear(st_f)
                        for c in T.serial(n_chunks):
                            gc = base + c
                            st = gc % NS
                            pb = c % 2
                            pph = (T.if_then_else(pb == 0, pu0, pu1) + c // 2) % 2  # phase of P's buffer pb
                            t0 = seq_start + c * C
                            T.barrier_wait(full[st], (gc // NS) % 2)
                            # G of the chunk's last row, its flat index in int32 (as fac_s[st, 0, row] TileLang
                            # widened the index to int64, a 64-bit c % 3 on the state's path every chunk). Formed
                            # here, not after Vn^T's issue: with its exp2 pending there, ptxas put the wait for Vn^T
                            # before the 64 FMULs of the decay, i.e. on the chain (SASS; -1% on the long rows, H200,
                            # results/2026-11-25-h200-s24/timeline_ab)
                            gl_row = st * (FAC_SLOTS * C) + ROW_G * C + T.min(C, seq_end - t0) - 1
                            gl = T.exp2(fac_flat[gl_row])
                            if v_load == "ldsm" and V_EARLY:  # V^T's loads in flight from the start of the chunk
                                load_v_transposed(v_s, vt_b, st, tx)
                            # "split": S^T in bf16 as two K halves, st_h0 dead once S^T Q^T's first half is done
                            if sq_order == "split":
                                for i, j in T.Parallel(BV, K // 2):
                                    st_h0[i, j] = st_f[i, j]
                                for i, j in T.Parallel(BV, K // 2):
                                    st_h1[i, j] = st_f[i, j + K // 2]
                            else:
                                T.copy(st_f, st_b)
                            state_times(st_b, st_h0, st_h1, k_s, st, z_f)  # Z^T = S^T K^T
                            if DEFER_O and c > 0:  # the previous chunk's O^T (still in ot_f) leaves while Z^T runs
                                store_o(o, o_s, ot_f, t0 - C, seq_end, hv, v0)
                            state_times(st_b, st_h0, st_h1, q_s, st, ot_f)  # S^T Q^T
                            if v_load == "ldsm" and not V_EARLY:
                                load_v_transposed(v_s, vt_b, st, tx)
                            T.barrier_wait(fac_ready[st], (gc // NS) % 2)  # F_WF and F_UF of the stage
                            # "overlap": Z^T done, S^T Q^T may still run while W^T is formed; "split": Z^T and S^T Q^T's
                            # first half done, its second half may still run; "wait": both done
                            T.wait_wgmma(0 if sq_order == "wait" else 1)
                            if v_load == "ldsm":
                                for i, j in T.Parallel(BV, C):
                                    w_b[i, j] = vt_b[i, j] - z_f[i, j] * fac_s[st, F_WF, j]
                            else:
                                for i, j in T.Parallel(BV, C):
                                    w_b[i, j] = v_s[st, j, i] - z_f[i, j] * fac_s[st, F_WF, j]
                            if fused_inverse:
                                T.barrier_wait(a_ready[pb], pph)
                                T.wgmma_gemm(w_b, a_s[pb, :, :], z_f, transpose_B=True, clear_accum=True,
                                             policy=full_row)
                            else:
                                T.wgmma_gemm(w_b, a_s[st, :, :], z_f, transpose_B=True, clear_accum=True,
                                             policy=full_row)
                            for i, j in T.Parallel(BV, K):  # the state's decay while Vn^T runs (no product reads st_f)
                                st_f[i, j] = st_f[i, j] * gl
                            for j in T.Parallel(C):  # the update's column factors, loaded before the wait
                                fw_f[j] = fac_s[st, F_UF, j]
                            T.wait_wgmma(0)
                            for i, j in T.Parallel(BV, C):
                                w_b[i, j] = z_f[i, j] * fw_f[j]
                            if P_ON_STATE:  # Q K^T (this warpgroup's half of P's columns) ahead of the update
                                T.wgmma_gemm(q_s[st, :, :], k_s[st, :, :], sp_f, transpose_B=True,
                                             clear_accum=True, policy=T.GemmWarpPolicy.FullCol)
                            T.wgmma_gemm(w_b, k_s[st, :, :], st_f, clear_accum=False, policy=full_row)
                            # O's operand Vn = Vn' diag(beta), while the state update runs
                            for i, j in T.Parallel(BV, C):
                                vn_b[i, j] = z_f[i, j] * fac_s[st, ROW_BETA, j]
                            if P_ON_STATE:
                                # form_p's operations (same values): the exponent's row and column terms, then the
                                # masked, gated P into p_s[pb] once Q K^T is done (the update still running)
                                for j in T.Parallel(C):
                                    sgq_f[j] = fac_s[st, ROW_G, j]
                                for i in T.Parallel(C):
                                    sgr_f[i] = fac_s[st, ROW_G, i] + T.log2(scale)
                                T.wait_wgmma(1)
                                gate_p(spb_f, sp_f, sgr_f, sgq_f, t0, seq_end)
                                T.copy(spb_f, p_s[pb, :, :])
                                T.fence_proxy_async()  # generic-proxy stores of P -> both warpgroups' wgmma reads
                                T.sync_threads(P_BARRIER_ID, ST)  # both halves written (p_s[pb] was last read two
                                # chunks ago, before either warpgroup passed this barrier one chunk ago)
                                for i, j in T.Parallel(BV, C):  # O's row factor (derive_factors, F_OF)
                                    ot_f[i, j] = ot_f[i, j] * fac_s[st, F_OF, j]
                            else:
                                p_ready_wait(pb)
                                for i, j in T.Parallel(BV, C):
                                    ot_f[i, j] = ot_f[i, j] * of_s[pb, j]
                            T.wgmma_gemm(vn_b, p_s[pb, :, :], ot_f, transpose_B=True, clear_accum=False,
                                         policy=full_row)
                            T.wait_wgmma(0)
                            T.barrier_arrive(p_used[pb])
                            T.barrier_arrive(empty[st])
                            if not DEFER_O:
                                store_o(o, o_s, ot_f, t0, seq_end, hv, v0)
                        if DEFER_O and n_chunks > 0:
                            store_o(o, o_s, ot_f, seq_start + (n_chunks - 1) * C, seq_end, hv, v0)
                        if persistent:
                            # the next item's initial state (from L2: the producer prefetched it) is loaded before
                            # this item's final state is stored, so the loads' latency passes under the stores
                            if (flags % 2 == 1) & (nx_state[1] >= 0):
                                for i, j in T.Parallel(BV, K):
                                    h0_f[i, j] = h0[nx_state[0], nx_state[1], j, i]
                            else:  # written on every path: h0_f is dead during the chunks (else: 64 spilled registers)
                                T.clear(h0_f)
                        else:
                            T.tma_store_wait()  # o_s must outlive the last store's reads
                        if flags // 2 % 2 == 1:
                            for i, j in T.Parallel(BV, K):
                                ht[n, hv, j, v0 + i] = st_f[i, j]
                        if persistent:
                            base = base + n_chunks
                            pu0 = pu0 + (n_chunks + 1) // 2
                            pu1 = pu1 + n_chunks // 2
                if persistent:
                    T.tma_store_wait()  # o_s must outlive the last store's reads (the next item's first O store
                    # waits for the item before's itself)

            elif tx < PT:
                # --------------------------------- auxiliary warpgroup: P (and with fused_inverse A~ first)
                T.set_max_nreg(aux_regs, 0)
                if persistent:
                    base = 0
                    pu0 = 0
                    pu1 = 0
                for it in item_rounds(num_items, num_ctas):
                    p = item_index(it, bid, num_ctas) if persistent else bid
                    if (p < num_items) if persistent else True:
                        item_of(seq_table, cu_seqlens, p, persistent, launch_heads, hv_base, it_n, it_hv,
                                it_hk, it_start, it_end)
                        seq_start = it_start[0]
                        seq_end = it_end[0]
                        n_chunks = T.ceildiv(seq_end - seq_start, C)
                        if MERGED:
                            # the first two chunks' loads (the stages are free); with pdl q, k and v of the first
                            # preload_stages before the wait on the grid before (factor_rows), the rest after it
                            rows0 = rows_start(seq_start, it_n[0])
                            if pdl:
                                if tx < ST + 32:
                                    for c in T.serial(T.min(preload_stages, n_chunks)):
                                        load_inputs(q, k, v, q_s, k_s, v_s, full, seq_start, it_hk[0], it_hv[0],
                                                    (p % NVB) * BV, c, c)
                                T.pdl_sync()
                            if tx < ST + 32:
                                for c in T.serial(T.min(2, n_chunks)):
                                    load_chunk(q, k, v, a, rows, q_s, k_s, v_s, a_s, fac_s, full, empty, seq_start,
                                               rows0, it_hk[0], it_hv[0], (p % NVB) * BV, c, c,
                                               (c >= preload_stages) if pdl else True)
                            inverse_loop_ahead(q, k, v, a, rows, q_s, k_s, v_s, a_s, fac_s, fac_flat, xh_s, kk_f, lr,
                                               sr, gr, gcol, bcol, full, empty, p_used, a_ready, fac_ready, fl_row,
                                               seq_start, seq_end, n_chunks, rows0, it_hk[0], it_hv[0],
                                               (p % NVB) * BV, scale, tx - ST)
                        if fused_inverse and not MERGED:
                            for c2 in T.serial(T.ceildiv(n_chunks, 2)):
                                for par in T.unroll(2):  # c % 2, the double buffers' index, is a constant in each copy
                                    c = 2 * c2 + par
                                    if c < n_chunks:
                                        if REGS:
                                            form_inverse_regs(k_s, fac_s, xh_s, a_s, kk_f, lr, sr, gr, gcol, bcol,
                                                              full, p_used, a_ready, seq_start, seq_end, c, base + c,
                                                              pu0 if par == 0 else pu1, tx - ST)
                                        else:
                                            form_inverse(k_s, fac_s, fac_flat, lx_s, a_s, kk_f, rb_f, cn_f, col, xo,
                                                         tt, a_f, b_f, ah, al, bh, bl, xa, th, bq, bf, x_b, g_b, o_b,
                                                         col_g, full, p_used, a_ready, seq_start, seq_end, c, base + c,
                                                         pu0 if par == 0 else pu1, tx - ST)
                                        if P_ON_STATE:  # the stage's last reader here is the inverse's epilogue
                                            T.barrier_arrive(empty[(base + c) % NS])
                                        else:
                                            form_p(q_s, k_s, fac_s, p_s, of_s, rq_s, p_f, qq_f, qn_f, gr_f, pb_f,
                                                   gq_f, full, empty, p_used, seq_start, seq_end, scale, c, base + c,
                                                   pu0 if par == 0 else pu1)
                        if not fused_inverse:
                            p_loop_by_pairs(q_s, k_s, fac_s, p_s, of_s, rq_s, p_f, qq_f, qn_f, gr_f, pb_f, gq_f, full,
                                            empty, p_used, seq_start, seq_end, scale, n_chunks, base, pu0, pu1)
                        if persistent:
                            base = base + n_chunks
                            pu0 = pu0 + (n_chunks + 1) // 2
                            pu1 = pu1 + n_chunks // 2
            elif not MERGED:
                # ------------------------- producer warpgroup (first warp loads, warps 1-2 derive factors)
                T.set_max_nreg(producer_regs, 0)
                if pdl:
                    # q, k and v are complete when the grid starts (kkt_solve waited for the grids before it):
                    # the first item's first preload_stages stages get them during kkt_solve's last wave, so that
                    # after its end only a and the factor rows (9 of a stage's 57 KB) are left to load there
                    if preload_stages > 0:
                        if (tx < PT + 32) & (bid < num_items):
                            item_of(seq_table, cu_seqlens, bid, persistent, launch_heads, hv_base, it_n, it_hv,
                                    it_hk, it_start, it_end)
                            for c in T.serial(T.min(preload_stages, T.ceildiv(it_end[0] - it_start[0], C))):
                                load_inputs(q, k, v, q_s, k_s, v_s, full, it_start[0], it_hk[0], it_hv[0],
                                            (bid % NVB) * BV, c, c)
                    T.pdl_sync()  # kkt_solve's a and rows are complete and visible from here on
                if persistent:
                    base = 0
                for it in item_rounds(num_items, num_ctas):
                    p = item_index(it, bid, num_ctas) if persistent else bid
                    if (p < num_items) if persistent else True:
                        item_of(seq_table, cu_seqlens, p, persistent, launch_heads, hv_base, it_n, it_hv,
                                it_hk, it_start, it_end)
                        n = it_n[0]
                        seq_start = it_start[0]
                        rows0 = rows_start(seq_start, n)
                        n_chunks = T.ceildiv(it_end[0] - seq_start, C)
                        if persistent and prefetch_h0 and it > 0 and flags % 2 == 1 and tx == PT:
                            # the item's initial state into L2 while the state warpgroups finish the item before
                            # (up to num_stages chunks): at the item boundary every CTA loads one, all at once
                            T.call_extern("handle", "flashqla_prefetch_l2", T.address_of(h0[n, it_hv[0], 0, 0]),
                                          K * V * 4)
                        for c in T.serial(n_chunks):
                            if tx < PT + 32:
                                load_chunk(q, k, v, a, rows, q_s, k_s, v_s, a_s, fac_s, full, empty, seq_start, rows0,
                                           it_hk[0], it_hv[0], (p % NVB) * BV, c, base + c, qkv_due(it, c))
                            elif tx < PT + 32 + C:
                                derive_factors(fac_s, fac_flat, full, fac_ready, fl_row, seq_start, it_end[0], scale,
                                               c, base + c, tx - PT - 32)
                        if persistent:
                            base = base + n_chunks

    return chunk_fwd
