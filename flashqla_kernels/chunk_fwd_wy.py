"""Fused GDN chunked forward, v5: the state chain on the WY form (two products per chunk instead of three).

Same inputs, outputs and launch arguments as chunk_fwd.py (see its docstring); only the order of work differs.
Per chunk (A~ the gated inverse from kkt_solve, wf_r = gamma_r / ||k_r||, d_r the decay to the chunk's end):
    U  = A~ V,  M = A~ diag(wf) K         -- do not depend on the state: an auxiliary warpgroup forms them
    Vn = U - M S0                         -- the chain's first product
    S  = gamma_last S0 + K^T diag(d) Vn    -- its second
    O  = scale [diag(gamma) Q S0 + (Q K^T (.) Gamma) Vn]
v4 formed W = V - diag(wf) K S0 and then Vn = A~ W on the chain: three dependent products and one more
pass through shared memory per chunk. U and M are rounded to the input dtype like W was.

Tile plan: one CTA per (sequence, value head, V block of `block_v`), 4 warpgroups (512 threads):
    WG0 "state"  : S [K, block_v] fp32 in registers; S (bf16) to shared, Vn = U - M S, S update
    WG1 "output" : P = Q K^T (.) Gamma, O = gamma Q S + P Vn, O through shared memory to 16-byte row stores;
                   it releases the input stage as soon as P is formed
    WG2 "aux"    : U = A~ V written over the stage's V tile, A~ scaled by wf in place, M = A~' K into m_s;
                   runs ahead of the chain as far as the stages and the single M buffer allow
    WG3 producer : one warp loads q, k, v, a (TMA) and G with the per-row factors into `num_stages` stages.
Registers (setmaxnreg): the launch gives 65536 / 512 = 128 a thread; state + output + aux + producer = 512.
Shared memory at block_v 128: stages 2 x 56 KB, S 32, M 16, d Vn 16, Vn 16 x `vn_buffers`, P 8, O 16 KB.
"""


import tilelang
import tilelang.language as T

LOG2E = 1.4426950408889634
L2NORM_EPS = 1e-6


def chunk_fwd_wy_program(dtype: str = "bfloat16", use_l2norm: bool = False, block_v: int = 128,
                         head_dim: int = 128, chunk_size: int = 64, num_stages: int = 2, vn_buffers: int = 1,
                         state_regs: int = 240, output_regs: int = 152, aux_regs: int = 96, producer_regs: int = 24):
    assert state_regs + output_regs + aux_regs + producer_regs <= 512, "65536 registers over 4 warpgroups"
    K = V = head_dim
    C, BV, NS, NB = chunk_size, block_v, num_stages, vn_buffers
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
        with T.Kernel(NVB * num_v_heads, num_seqs_p1 - 1, threads=512) as (bhv, n):
            hv = bhv // NVB
            v0 = (bhv % NVB) * BV
            hk = T.alloc_var("int32")
            hk = hv // (num_v_heads // num_k_heads)
            seq_start = cu_seqlens[n]
            seq_end = cu_seqlens[n + 1]
            n_chunks = T.ceildiv(seq_end - seq_start, C)

            # stages filled by the producer (v_s then holds U, a_s holds A~ diag(wf), both written by the aux)
            q_s = T.alloc_shared((NS, C, K), dtype)
            k_s = T.alloc_shared((NS, C, K), dtype)
            v_s = T.alloc_shared((NS, C, BV), dtype)
            a_s = T.alloc_shared((NS, C, C), dtype)
            gc_s = T.alloc_shared((NS, C), acc)
            rk_s = T.alloc_shared((NS, C), acc)
            wf_s = T.alloc_shared((NS, C), acc)      # gamma_r rk_r: column factor of A~ in M
            uf_s = T.alloc_shared((NS, C), acc)      # d_r rk_r (0 past the end): row factor of Vn in S
            gl_s = T.alloc_shared((NS,), acc)
            # intermediates handed between warpgroups
            m_s = T.alloc_shared((C, K), dtype)
            h_s = T.alloc_shared((K, BV), dtype)
            w_s = T.alloc_shared((C, BV), dtype)      # d Vn, the B operand of the state update
            vn_s = T.alloc_shared((NB, C, BV), dtype)
            p_s = T.alloc_shared((C, C), dtype)
            rq_s = T.alloc_shared((C,), acc)
            o_s = T.alloc_shared((C, BV), dtype)
            T.annotate_layout({o_s: tilelang.layout.make_swizzled_layout(o_s)})

            s_f = T.alloc_fragment((K, BV), acc)
            u_f = T.alloc_fragment((C, BV), acc)
            uf_f = T.alloc_fragment((C,), acc)
            x_f = T.alloc_fragment((C, BV), acc)
            y_f = T.alloc_fragment((C, K), acc)
            o_f = T.alloc_fragment((C, BV), acc)
            p_f = T.alloc_fragment((C, C), acc)
            ga_f = T.alloc_fragment((C, C), acc)
            qq_f = T.alloc_fragment((C, K), acc)
            qn_f = T.alloc_fragment((C,), acc)
            of_f = T.alloc_fragment((C,), acc)

            full = T.alloc_barrier(arrive_count=[32] * NS)
            empty = T.alloc_barrier(arrive_count=[256] * NS)
            m_ready = T.alloc_barrier(arrive_count=128)
            m_used = T.alloc_barrier(arrive_count=128)
            h_ready = T.alloc_barrier(arrive_count=128)
            h_used = T.alloc_barrier(arrive_count=128)
            vn_ready = T.alloc_barrier(arrive_count=[128] * NB)
            vn_used = T.alloc_barrier(arrive_count=[128] * NB)

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
                    vb = c % NB
                    T.barrier_wait(full[st], (c // NS) % 2)
                    T.barrier_wait(m_ready, c % 2)
                    T.barrier_wait(h_used, (c + 1) % 2)
                    T.copy(s_f, h_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(h_ready)
                    T.gemm(m_s, h_s, u_f, clear_accum=True)
                    T.barrier_arrive(m_used)
                    for i, j in T.Parallel(C, BV):
                        u_f[i, j] = v_s[st, i, j] - u_f[i, j]
                    for i in T.Parallel(C):
                        uf_f[i] = uf_s[st, i]
                    T.barrier_wait(vn_used[vb], (c // NB + 1) % 2)
                    for i, j in T.Parallel(C, BV):
                        vn_s[vb, i, j] = u_f[i, j]
                        w_s[i, j] = u_f[i, j] * uf_f[i]
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
                T.set_max_nreg(output_regs, 1)
                for c in T.serial(n_chunks):
                    st = c % NS
                    vb = c % NB
                    t0 = seq_start + c * C
                    T.barrier_wait(full[st], (c // NS) % 2)
                    for i, j in T.Parallel(C, C):
                        ga_f[i, j] = T.if_then_else(
                            (j <= i) & (t0 + i < seq_end), T.exp2((gc_s[st, i] - gc_s[st, j]) * LOG2E), 0.0)
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
                            p_s[i, j] = p_f[i, j] * ga_f[i, j] * rq_s[i] * rk_s[st, j]
                    else:
                        for i in T.Parallel(C):
                            rq_s[i] = scale
                        for i, j in T.Parallel(C, C):
                            p_s[i, j] = p_f[i, j] * ga_f[i, j] * scale
                    for i in T.Parallel(C):
                        of_f[i] = T.exp2(gc_s[st, i] * LOG2E) * rq_s[i]
                    T.barrier_arrive(empty[st])  # nothing below reads the stage
                    for i, j in T.Parallel(C, BV):
                        o_f[i, j] = o_f[i, j] * of_f[i]
                    T.barrier_wait(vn_ready[vb], (c // NB) % 2)
                    T.gemm(p_s, vn_s[vb, :, :], o_f, clear_accum=False)
                    T.barrier_arrive(vn_used[vb])
                    T.copy(o_f, o_s)
                    for i, j in T.Parallel(C, BV):
                        if t0 + i < seq_end:
                            o[t0 + i, hv, v0 + j] = o_s[i, j]

            elif tx < 384:
                # ------------------------------------------------------------- WG2: aux (U and M)
                T.set_max_nreg(aux_regs, 0)
                for c in T.serial(n_chunks):
                    st = c % NS
                    T.barrier_wait(full[st], (c // NS) % 2)
                    T.gemm(a_s[st, :, :], v_s[st, :, :], x_f, clear_accum=True)
                    T.copy(x_f, v_s[st, :, :])
                    for i, j in T.Parallel(C, C):
                        a_s[st, i, j] = a_s[st, i, j] * wf_s[st, j]
                    T.fence_proxy_async()
                    T.barrier_wait(m_used, (c + 1) % 2)
                    T.gemm(a_s[st, :, :], k_s[st, :, :], y_f, clear_accum=True)
                    T.copy(y_f, m_s)
                    T.fence_proxy_async()
                    T.barrier_arrive(m_ready)

            else:
                # ------------------------------------------------------------- WG3: producer
                T.set_max_nreg(producer_regs, 0)
                if tx < 384 + 32:
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
