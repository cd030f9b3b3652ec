"""Fused GDN chunked forward: deltas, state update and output for every chunk, the state kept on chip.

Inputs (tokens of all sequences packed along one axis, T tokens, N sequences):
    q, k       [T, H, K]     bf16/fp16 (value head hv reads key head hv // (HV // H); nothing repeated)
    v          [T, HV, V]    bf16/fp16
    gc         [T, HV]       fp32 chunk-local cumsum G of the log decay, from kkt_solve
    a          [T, HV, C]    gated inverse A~ = (A (.) Gamma), A = (I + strict_lower(diag(beta) K K^T))^-1 diag(beta),
                             from kkt_solve
    rk         [T, HV]       fp32 1/||k|| from kkt_solve (read only when use_l2norm)
    h0         [N(+1), HV, K, V] fp32 initial states (read only when flags & 1)
    cu_seqlens [N + 1]       int32
    scale      fp32 run-time scalar; flags int32: bit 0 = h0 given, bit 1 = write final state
Outputs:
    o          [T, HV, V]    q's dtype
    ht         [N(+1), HV, K, V] fp32 final states (written only when flags & 2)

Per chunk (C tokens, local index r, S0 the state entering it, G the chunk-local cumsum of g):
    gamma_r = exp(G_r), Gamma_rs = exp(G_r - G_s) (r >= s), d_r = exp(G_last - G_r)   (all exponents <= 0)
    W  = V - diag(gamma) K S0 ;  Vn = A~ W
    O  = scale [diag(gamma) Q S0 + (Q K^T (.) Gamma) Vn]
    S  = gamma_last S0 + K^T diag(d) Vn
With use_l2norm every K and Q product is rescaled by 1/||k||, 1/||q|| on its rows/columns (the norms of q
are computed from the shared tile, those of k come from kkt_solve), so no normalised copy is made.
Rows past the end of a sequence: a and v arrive by TMA from the next sequence's rows (finite: every row of
a is written by kkt_solve, cu_seqlens[-1] == T is validated), so their Vn rows are finite values that
d = 0 removes from the state and the masked Gamma removes from O; they are never stored.

Tile plan: one CTA per (sequence, value head, V block of `block_v`), 3 warpgroups (`threads` = 384):
    WG0 "state"  : S [K, block_v] fp32 in registers; writes S (bf16) to shared, U = K S, W, Vn = A~ W,
                   S = gamma_last S + K^T (d Vn)           -- the serial chain across chunks; it waits on
                   nothing but its inputs and the release of the two buffers it hands over
    WG1 "output" : P = Q K^T (.) Gamma, O = gamma Q S + P Vn, O through shared memory (swizzled) to
                   masked 16-byte row stores                   -- overlaps WG0's chain; it releases the
                   input stage as soon as P is formed
    WG2 producer : one warp loads q, k, v, a (TMA) and G, with the per-row factors of WG0 (gamma rk, d rk,
                   gamma_last) computed once, into `num_stages` shared stages.
Every product is a wgmma with fp32 accumulation, from shared memory except P Vn, whose A operand P stays in
the output warpgroup's registers (a bf16 fragment with the Q K^T accumulator's thread layout); mbarriers hand stages and
intermediates between warpgroups (Vn double-buffered); w/u, the deltas and the per-chunk states never
leave the SM. v and o tiles are swizzled in shared memory (they are read / written elementwise, not by
wgmma); the key-head index is computed once in int32.
"""


import tilelang
import tilelang.language as T

LOG2E = 1.4426950408889634
L2NORM_EPS = 1e-6


def chunk_fwd_program(dtype: str = "bfloat16", use_l2norm: bool = False, block_v: int = 128,
                      head_dim: int = 128, chunk_size: int = 64, num_stages: int = 2,
                      state_regs: int = 240, output_regs: int = 160, producer_regs: int = 40):
    # setmaxnreg: the launch cap is 65536 / 384 = 168 registers a thread; the state warpgroup grows to
    # `state_regs` (inc), the output and producer warpgroups shrink (dec). .inc below the current count
    # (or .dec above it) is an illegal instruction, so the direction follows from the cap.
    K = V = head_dim
    C, BV, NS = chunk_size, block_v, num_stages
    assert V % BV == 0
    NVB = V // BV
    num_tokens = T.dynamic("num_tokens")
    num_k_heads = T.dynamic("num_k_heads")
    num_v_heads = T.dynamic("num_v_heads")
    num_seqs_p1 = T.dynamic("num_seqs_p1")
    acc = "float32"

    @T.prim_func
    def chunk_fwd(
        q: T.Tensor((num_tokens, num_k_heads, K), dtype),
        k: T.Tensor((num_tokens, num_k_heads, K), dtype),
        v: T.Tensor((num_tokens, num_v_heads, V), dtype),
        gc: T.Tensor((num_tokens, num_v_heads), acc),
        a: T.Tensor((num_tokens, num_v_heads, C), dtype),
        rk: T.Tensor((num_tokens, num_v_heads), acc),
        h0: T.Tensor((num_seqs_p1, num_v_heads, K, V), acc),
        ht: T.Tensor((num_seqs_p1, num_v_heads, K, V), acc),
        cu_seqlens: T.Tensor((num_seqs_p1,), "int32"),
        o: T.Tensor((num_tokens, num_v_heads, V), dtype),
        scale: T.float32,
        flags: T.int32,
    ):
        with T.Kernel(NVB * num_v_heads, num_seqs_p1 - 1, threads=384) as (bhv, n):
            hv = bhv // NVB
            v0 = (bhv % NVB) * BV
            hk = T.alloc_var("int32")  # one int32 division, not a 64-bit one inlined into every index
            hk = hv // (num_v_heads // num_k_heads)
            seq_start = cu_seqlens[n]
            seq_end = cu_seqlens[n + 1]
            n_chunks = T.ceildiv(seq_end - seq_start, C)

            # stages filled by the producer
            q_s = T.alloc_shared((NS, C, K), dtype)
            k_s = T.alloc_shared((NS, C, K), dtype)
            v_s = T.alloc_shared((NS, C, BV), dtype)
            a_s = T.alloc_shared((NS, C, C), dtype)
            gc_s = T.alloc_shared((NS, C), acc)      # G (rows past the end repeat the last valid G)
            rk_s = T.alloc_shared((NS, C), acc)      # 1/||k|| (l2norm) or 1
            wf_s = T.alloc_shared((NS, C), acc)      # gamma_r rk_r: row factor of K S0 in W
            uf_s = T.alloc_shared((NS, C), acc)      # d_r rk_r (0 past the end): row factor of Vn in S
            gl_s = T.alloc_shared((NS,), acc)       # gamma_last
            # intermediates handed between warpgroups
            h_s = T.alloc_shared((K, BV), dtype)
            w_s = T.alloc_shared((C, BV), dtype)
            vn_s = T.alloc_shared((2, C, BV), dtype)
            rq_s = T.alloc_shared((C,), acc)
            o_s = T.alloc_shared((C, BV), dtype)      # O leaves through shared memory in 16-byte row vectors
            # v (read elementwise for W) and o (written from the accumulator layout) are not wgmma operands:
            # swizzle them so those accesses are free of bank conflicts
            T.annotate_layout({v_s: tilelang.layout.make_swizzled_layout(v_s),
                               o_s: tilelang.layout.make_swizzled_layout(o_s)})

            s_f = T.alloc_fragment((K, BV), acc)
            u_f = T.alloc_fragment((C, BV), acc)
            wf_f = T.alloc_fragment((C,), acc)
            o_f = T.alloc_fragment((C, BV), acc)
            p_f = T.alloc_fragment((C, C), acc)
            p_b = T.alloc_fragment((C, C), dtype)     # P as the register A operand of P Vn (no shared round trip)
            ga_f = T.alloc_fragment((C, C), acc)
            qq_f = T.alloc_fragment((C, K), acc)
            qn_f = T.alloc_fragment((C,), acc)
            of_f = T.alloc_fragment((C,), acc)

            full = T.alloc_barrier(arrive_count=[32] * NS)
            empty = T.alloc_barrier(arrive_count=[256] * NS)
            h_ready = T.alloc_barrier(arrive_count=128)
            h_used = T.alloc_barrier(arrive_count=128)
            vn_ready = T.alloc_barrier(arrive_count=[128, 128])
            vn_used = T.alloc_barrier(arrive_count=[128, 128])

            tx = T.get_thread_binding()

            if tx < 128:
                # ------------------------------------------------------------- WG0: state chain
                T.set_max_nreg(state_regs, 1)
                if flags % 2 == 1:
                    T.copy(h0[n, hv, 0:K, v0:v0 + BV], s_f)
                else:
                    T.clear(s_f)
                for c in T.serial(n_chunks):
                    st = c % NS
                    vb = c % 2
                    T.barrier_wait(full[st], (c // NS) % 2)
                    T.barrier_wait(h_used, (c + 1) % 2)
                    T.copy(s_f, h_s)
                    T.fence_proxy_async()  # generic-proxy stores -> WG1's wgmma reads
                    T.barrier_arrive(h_ready)
                    T.gemm(k_s[st, :, :], h_s, u_f, clear_accum=True)
                    for i in T.Parallel(C):
                        wf_f[i] = wf_s[st, i]
                    # W in registers first, then one store pass: a loop that both reads v_s and writes
                    # w_s gets a warpgroup barrier per iteration from TileLang's hazard analysis
                    for i, j in T.Parallel(C, BV):
                        u_f[i, j] = v_s[st, i, j] - wf_f[i] * u_f[i, j]
                    T.copy(u_f, w_s)
                    T.fence_proxy_async()  # each thread's stores -> the async proxy, before the gemm's barrier
                    T.gemm(a_s[st, :, :], w_s, u_f, clear_accum=True)
                    T.barrier_wait(vn_used[vb], (c // 2 + 1) % 2)
                    for i in T.Parallel(C):
                        wf_f[i] = uf_s[st, i]
                    for i, j in T.Parallel(C, BV):
                        vn_s[vb, i, j] = u_f[i, j]
                        w_s[i, j] = u_f[i, j] * wf_f[i]
                    T.fence_proxy_async()
                    T.barrier_arrive(vn_ready[vb])
                    for i, j in T.Parallel(K, BV):
                        s_f[i, j] = s_f[i, j] * gl_s[st]
                    T.gemm(k_s[st, :, :], w_s, s_f, transpose_A=True, clear_accum=False)
                    T.barrier_arrive(empty[st])
                if flags // 2 % 2 == 1:
                    T.copy(s_f, ht[n, hv, 0:K, v0:v0 + BV])

            elif tx < 256:
                # ------------------------------------------------------------- WG1: output
                T.set_max_nreg(output_regs, 0)  # below the launch cap (65536 / 384 = 168): a decrease
                for c in T.serial(n_chunks):
                    st = c % NS
                    vb = c % 2
                    t0 = seq_start + c * C
                    T.barrier_wait(full[st], (c // NS) % 2)
                    for i, j in T.Parallel(C, C):
                        ga_f[i, j] = T.if_then_else(
                            (j <= i) & (t0 + i < seq_end), T.exp2((gc_s[st, i] - gc_s[st, j]) * LOG2E), 0.0)
                    # Q S first: it frees h_s, which the state warpgroup overwrites at its next chunk
                    T.barrier_wait(h_ready, c % 2)
                    T.gemm(q_s[st, :, :], h_s, o_f, clear_accum=True)
                    T.barrier_arrive(h_used)
                    T.gemm(q_s[st, :, :], k_s[st, :, :], p_f, transpose_B=True, clear_accum=True)
                    if use_l2norm:
                        for i, j in T.Parallel(C, K):
                            qq_f[i, j] = q_s[st, i, j] * q_s[st, i, j]
                        T.reduce_sum(qq_f, qn_f, dim=1)
                        for i in T.Parallel(C):
                            rq_s[i] = T.rsqrt(qn_f[i] + L2NORM_EPS) * scale
                        for i, j in T.Parallel(C, C):
                            p_b[i, j] = p_f[i, j] * ga_f[i, j] * rq_s[i] * rk_s[st, j]
                    else:
                        for i in T.Parallel(C):
                            rq_s[i] = scale
                        for i, j in T.Parallel(C, C):
                            p_b[i, j] = p_f[i, j] * ga_f[i, j] * scale
                    for i in T.Parallel(C):
                        of_f[i] = T.exp2(gc_s[st, i] * LOG2E) * rq_s[i]
                    T.barrier_arrive(empty[st])  # nothing below reads the stage: the producer may refill it
                    for i, j in T.Parallel(C, BV):
                        o_f[i, j] = o_f[i, j] * of_f[i]
                    T.barrier_wait(vn_ready[vb], (c // 2) % 2)
                    T.gemm(p_b, vn_s[vb, :, :], o_f, clear_accum=False)
                    T.barrier_arrive(vn_used[vb])
                    T.copy(o_f, o_s)
                    for i, j in T.Parallel(C, BV):
                        if t0 + i < seq_end:
                            o[t0 + i, hv, v0 + j] = o_s[i, j]

            else:
                # ------------------------------------------------------------- WG2: producer
                T.set_max_nreg(producer_regs, 0)
                if tx < 256 + 32:
                    for c in T.serial(n_chunks):
                        st = c % NS
                        t0 = seq_start + c * C
                        t_last = T.min(t0 + C, seq_end) - 1
                        T.barrier_wait(empty[st], (c // NS + 1) % 2)
                        T.tma_copy(q[t0:t0 + C, hk, 0:K], q_s[st, :, :], barrier=full[st])
                        T.tma_copy(k[t0:t0 + C, hk, 0:K], k_s[st, :, :], barrier=full[st])
                        T.tma_copy(v[t0:t0 + C, hv, v0:v0 + BV], v_s[st, :, :], barrier=full[st])
                        T.tma_copy(a[t0:t0 + C, hv, 0:C], a_s[st, :, :], barrier=full[st])
                        for i in T.Parallel(C):
                            gc_s[st, i] = gc[T.min(t0 + i, t_last), hv]
                            if use_l2norm:
                                rk_s[st, i] = T.if_then_else(t0 + i <= t_last, rk[t0 + i, hv], 0.0)
                            else:
                                rk_s[st, i] = 1.0
                            wf_s[st, i] = T.exp2(gc_s[st, i] * LOG2E) * rk_s[st, i]
                            uf_s[st, i] = T.if_then_else(
                                t0 + i <= t_last, T.exp2((gc[t_last, hv] - gc_s[st, i]) * LOG2E) * rk_s[st, i], 0.0)
                            if i == 0:
                                gl_s[st] = T.exp2(gc[t_last, hv] * LOG2E)
                        T.barrier_arrive(full[st])

    return chunk_fwd
