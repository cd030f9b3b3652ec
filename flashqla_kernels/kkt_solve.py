"""Gate-free chunk inverse: A = (I + strict_lower(diag(beta) K K^T))^-1 diag(beta), per chunk and value head.

Inputs (tokens of every sequence packed along one axis, T = total tokens):
    k            [T, H, K]   bf16/fp16, key head of value head hv is hv // (HV // H)
    beta         [T, HV]     fp32
    cu_seqlens   [N + 1]     int32, sequence boundaries
    chunk_offsets[N + 1]     int32, exclusive prefix sum of ceil(len_n / C): chunk id -> sequence
Outputs:
    a            [T, HV, C]  bf16/fp16: row r of the chunk holding token t stored at a[t, hv, :]
    rk           [T, HV]     fp32, 1 / ||k_t|| (only when use_l2norm; it is what the fused kernel scales by)

With use_l2norm, L is built from normalised keys without a pass over HBM: ||k_r||^2 is the diagonal of K K^T.
Rows past the end of a sequence get beta = 0, so they solve to zero and are never stored (a chunk never
writes into its neighbour's rows). The gate is not applied here: the fused kernel multiplies A by
exp(G_r - G_s) elementwise, which equals inverting the gated matrix (D (I+L)^-1 D^-1, D = diag(exp G)).

Tile plan: one CTA of `threads` threads per (chunk, value head). K chunk [C, K] arrives by TMA, K K^T is one
wgmma (C x C x K) into fp32 registers, the masked L goes to shared memory in fp32, and the unit lower
triangular system is solved by forward substitution with one thread per column of the inverse, the column
kept in registers (fp32, C steps, no barriers). The grid is sized from shapes alone
(T // C + N + 1 chunk slots): no host synchronisation is needed to launch it.
"""


import tilelang
import tilelang.language as T

L2NORM_EPS = 1e-6
LOG2E = 1.4426950408889634


def kkt_solve_program(dtype: str = "bfloat16", use_l2norm: bool = False, head_dim_k: int = 128,
                      chunk_size: int = 64, threads: int = 128):
    K, C = head_dim_k, chunk_size
    assert threads >= C and threads % 128 == 0
    num_tokens = T.dynamic("num_tokens")
    num_k_heads = T.dynamic("num_k_heads")
    num_v_heads = T.dynamic("num_v_heads")
    num_seqs_p1 = T.dynamic("num_seqs_p1")

    @T.prim_func
    def kkt_solve(
        k: T.Tensor((num_tokens, num_k_heads, K), dtype),
        beta: T.Tensor((num_tokens, num_v_heads), "float32"),
        cu_seqlens: T.Tensor((num_seqs_p1,), "int32"),
        chunk_offsets: T.Tensor((num_seqs_p1,), "int32"),
        a: T.Tensor((num_tokens, num_v_heads, C), dtype),
        rk: T.Tensor((num_tokens, num_v_heads), "float32"),
    ):
        with T.Kernel(num_tokens // C + num_seqs_p1, num_v_heads, threads=threads) as (cid, hv):
            k_s = T.alloc_shared((C, K), dtype)
            l_s = T.alloc_shared((C, C), "float32")
            beta_s = T.alloc_shared((C,), "float32")
            rn_s = T.alloc_shared((C,), "float32")
            kk_f = T.alloc_fragment((C, C), "float32")
            col = T.alloc_local((C,), "float32")
            lo = T.alloc_var("int32")
            hi = T.alloc_var("int32")
            mid = T.alloc_var("int32")

            # chunk id -> sequence: largest n with chunk_offsets[n] <= cid (binary search, 31 steps)
            lo = 0
            hi = num_seqs_p1 - 1
            for _ in T.serial(31):
                if hi - lo > 1:
                    mid = (lo + hi) // 2
                    if chunk_offsets[mid] <= cid:
                        lo = mid
                    else:
                        hi = mid
            total_chunks = chunk_offsets[num_seqs_p1 - 1]
            hk = hv // (num_v_heads // num_k_heads)
            t0 = cu_seqlens[lo] + (cid - chunk_offsets[lo]) * C
            t_end = cu_seqlens[lo + 1]
            tx = T.get_thread_binding()

            if cid < total_chunks:
                T.copy(k[t0:t0 + C, hk, :], k_s)
                for i in T.Parallel(C):
                    beta_s[i] = T.if_then_else(t0 + i < t_end, beta[t0 + i, hv], 0.0)
                T.gemm(k_s, k_s, kk_f, transpose_B=True, clear_accum=True)
                T.copy(kk_f, l_s)
                if use_l2norm:
                    for i in T.Parallel(C):
                        rn_s[i] = T.rsqrt(l_s[i, i] + L2NORM_EPS)
                    for i in T.Parallel(C):
                        if t0 + i < t_end:
                            rk[t0 + i, hv] = rn_s[i]
                    for i, j in T.Parallel(C, C):
                        kk_f[i, j] = T.if_then_else(j < i, kk_f[i, j] * beta_s[i] * rn_s[i] * rn_s[j], 0.0)
                else:
                    for i, j in T.Parallel(C, C):
                        kk_f[i, j] = T.if_then_else(j < i, kk_f[i, j] * beta_s[i], 0.0)
                T.copy(kk_f, l_s)
                # forward substitution: thread j owns column j of (I + L)^-1
                if tx < C:
                    for r in T.unroll(C):
                        col[r] = T.if_then_else(r == tx, 1.0, 0.0)
                        for s in T.unroll(C):
                            if s < r:
                                col[r] = col[r] - l_s[r, s] * col[s]
                    for r in T.unroll(C):
                        if t0 + r < t_end:
                            a[t0 + r, hv, tx] = T.cast(col[r] * beta_s[tx], dtype)

    return kkt_solve
