"""GDN token recurrence (decode): the state of each (sequence, value head) in registers, one token at a time.

Inputs (tokens of all sequences packed along one axis, T tokens, N sequences):
    q, k       [T, H, K]     bf16/fp16 (value head hv reads key head hv // (HV // H); nothing repeated)
    v          [T, HV, V]    bf16/fp16
    g          [T, HV]       fp32 per-token log decay
    beta       [T, HV]       fp32
    h0         [N(+1), HV, K, V] fp32 initial states (read only when flags & 1, else zeros)
    cu_seqlens [N + 1]       int32 (zero-length sequences allowed: their final state is their initial state)
    scale      fp32 run-time scalar; flags int32: bit 0 = h0 given, bit 1 = write final state
Outputs:
    o          [T, HV, V]    q's dtype
    ht         [N(+1), HV, K, V] fp32 final states (written only when flags & 2)

Per token, with d = exp(g) (taken as exp2(g log2 e)) and, under use_l2norm, rk = 1/||k||, rq = 1/||q||
(eps 1e-6; else 1): S' = d S, u = beta (v - rk k^T S'), S <- S' + rk k u^T, o = scale rq S^T q.
All three K-reductions read the state entering the token, so one pass over S serves them:
    ks = k^T S, qs = q^T S, qk = q.k (and kk = k.k, qq = q.q under use_l2norm)
    u = beta (v - d rk ks) ;  o = scale rq (d qs + rk qk u) ;  S = d S + (rk k) u^T
which is S_t = exp(g) (I - beta k k^T) S + beta k v^T, o = scale S_t^T q with normalised q, k.

Tile plan: one CTA of `threads` threads per (value block of `block_v` columns, value head, sequence); the grid
is (V // block_v * HV, N) as in chunk_fwd. Each warp owns WC = 32 block_v / threads whole columns of
S [K, block_v] (fp32, registers only): its lanes are (RL = 32 VEC / WC row lanes) x (WC / VEC column lanes),
each lane holds VEC = 4 adjacent columns of RPT = K / RL adjacent rows. h0 / ht move as float4 (a warp
instruction touches RL rows x 32 B: whole sectors), q and k as one RPT-element vector a lane, v as VEC.
The K-reductions are in-lane sums over RPT rows then an xor butterfly over the RL row lanes (log2 RL
shuffles a value, no shared memory, no block barrier); every lane ends with the same sums, updates its own
rows, and the row-lane-0 lanes store o. The next token's q, k, v, g, beta load into registers while the
current token computes (multi-token sequences). Decode (T_seq = 1) is bound by reading h0 and writing ht
(128 KiB a (sequence, head)); a small block_v gives N HV V / block_v CTAs to spread that over the SMs.
"""


import tilelang
import tilelang.language as T

LOG2E = 1.4426950408889634
L2NORM_EPS = 1e-6
VEC = 4  # fp32 state columns a lane holds (one float4 of h0 / ht per row)


def recurrent_fwd_program(dtype: str = "bfloat16", use_l2norm: bool = False, block_v: int = 32,
                          head_dim: int = 128, threads: int | None = None):
    """threads defaults to 4 block_v: each warp then owns 8 columns (2 column lanes x 16 row lanes)."""
    K = V = head_dim
    BV = block_v
    threads = 4 * BV if threads is None else threads
    assert V % BV == 0 and threads % 32 == 0
    NVB = V // BV
    WC = 32 * BV // threads          # columns a warp owns
    assert WC % VEC == 0 and WC >= VEC, "each lane holds VEC whole columns"
    LC = WC // VEC                   # column lanes of a warp
    RL = 32 // LC                    # row lanes of a warp (the K-reduction runs over them)
    assert RL * LC == 32 and K % RL == 0
    RPT = K // RL                    # rows a lane holds
    NRED = 2 * VEC + (3 if use_l2norm else 1)  # ks[VEC], qs[VEC], qk (, kk, qq)
    num_tokens = T.dynamic("num_tokens")
    num_k_heads = T.dynamic("num_k_heads")
    num_v_heads = T.dynamic("num_v_heads")
    num_seqs_p1 = T.dynamic("num_seqs_p1")
    acc = "float32"

    @T.macro
    def load_token(q, k, v, g, beta, tok, hk, hv, row0, col0, q_in, k_in, v_in, gb_in):
        """One token's inputs for this lane: RPT rows of q and k, VEC columns of v, g and beta."""
        for m in T.vectorized(RPT):
            q_in[m] = q[tok, hk, row0 + m]
        for m in T.vectorized(RPT):
            k_in[m] = k[tok, hk, row0 + m]
        for c in T.vectorized(VEC):
            v_in[c] = v[tok, hv, col0 + c]
        gb_in[0] = g[tok, hv]
        gb_in[1] = beta[tok, hv]

    @T.prim_func
    def recurrent_fwd(
        q: T.Tensor((num_tokens, num_k_heads, K), dtype),
        k: T.Tensor((num_tokens, num_k_heads, K), dtype),
        v: T.Tensor((num_tokens, num_v_heads, V), dtype),
        g: T.Tensor((num_tokens, num_v_heads), acc),
        beta: T.Tensor((num_tokens, num_v_heads), acc),
        h0: T.Tensor((num_seqs_p1, num_v_heads, K, V), acc),
        ht: T.Tensor((num_seqs_p1, num_v_heads, K, V), acc),
        cu_seqlens: T.Tensor((num_seqs_p1,), "int32"),
        o: T.Tensor((num_tokens, num_v_heads, V), dtype),
        scale: T.float32,
        flags: T.int32,
    ):
        with T.Kernel(NVB * num_v_heads, num_seqs_p1 - 1, threads=threads) as (bhv, n):
            hv = bhv // NVB
            tx = T.get_thread_binding()
            lane = tx % 32
            rl = lane // LC
            row0 = rl * RPT
            col0 = (bhv % NVB) * BV + (tx // 32) * WC + (lane % LC) * VEC
            hk = T.alloc_var("int32")
            hk = hv // (num_v_heads // num_k_heads)
            seq_start = cu_seqlens[n]
            seq_len = cu_seqlens[n + 1] - seq_start

            s_r = T.alloc_local((RPT, VEC), acc)
            q_in = T.alloc_local((RPT,), dtype)
            k_in = T.alloc_local((RPT,), dtype)
            v_in = T.alloc_local((VEC,), dtype)
            gb_in = T.alloc_local((2,), acc)
            q_r = T.alloc_local((RPT,), acc)
            k_r = T.alloc_local((RPT,), acc)
            v_r = T.alloc_local((VEC,), acc)
            gb_r = T.alloc_local((2,), acc)
            red = T.alloc_local((NRED,), acc)
            u_r = T.alloc_local((VEC,), acc)
            o_r = T.alloc_local((VEC,), dtype)

            if flags % 2 == 1:
                for m in T.unroll(RPT):
                    for c in T.vectorized(VEC):
                        s_r[m, c] = h0[n, hv, row0 + m, col0 + c]
            else:
                for m, c in T.grid(RPT, VEC):
                    s_r[m, c] = 0.0
            if seq_len > 0:
                load_token(q, k, v, g, beta, seq_start, hk, hv, row0, col0, q_in, k_in, v_in, gb_in)

            for i in T.serial(seq_len):
                t = seq_start + i
                for m in T.unroll(RPT):
                    q_r[m] = T.cast(q_in[m], acc)
                    k_r[m] = T.cast(k_in[m], acc)
                for c in T.unroll(VEC):
                    v_r[c] = T.cast(v_in[c], acc)
                gb_r[0] = gb_in[0]
                gb_r[1] = gb_in[1]
                # the next token's inputs load while this one computes
                if i + 1 < seq_len:
                    load_token(q, k, v, g, beta, t + 1, hk, hv, row0, col0, q_in, k_in, v_in, gb_in)
                # in-lane partial sums over this lane's RPT rows
                for j in T.unroll(NRED):
                    red[j] = 0.0
                for m in T.unroll(RPT):
                    for c in T.unroll(VEC):
                        red[c] += k_r[m] * s_r[m, c]
                        red[VEC + c] += q_r[m] * s_r[m, c]
                    red[2 * VEC] += q_r[m] * k_r[m]
                    if use_l2norm:
                        red[2 * VEC + 1] += k_r[m] * k_r[m]
                        red[2 * VEC + 2] += q_r[m] * q_r[m]
                # xor butterfly over the RL row lanes (lane bits above the LC column bits)
                for b in T.unroll(RL.bit_length() - 1):
                    for j in T.unroll(NRED):
                        red[j] = red[j] + T.shfl_xor(red[j], LC << b)
                decay = T.exp2(gb_r[0] * LOG2E)
                if use_l2norm:
                    rk = T.rsqrt(red[2 * VEC + 1] + L2NORM_EPS)
                    rq = T.rsqrt(red[2 * VEC + 2] + L2NORM_EPS)
                    for c in T.unroll(VEC):
                        u_r[c] = gb_r[1] * (v_r[c] - decay * rk * red[c])
                        o_r[c] = T.cast(scale * rq * (decay * red[VEC + c] + rk * red[2 * VEC] * u_r[c]), dtype)
                    for m in T.unroll(RPT):
                        k_r[m] = k_r[m] * rk
                else:
                    for c in T.unroll(VEC):
                        u_r[c] = gb_r[1] * (v_r[c] - decay * red[c])
                        o_r[c] = T.cast(scale * (decay * red[VEC + c] + red[2 * VEC] * u_r[c]), dtype)
                for m in T.unroll(RPT):
                    for c in T.unroll(VEC):
                        s_r[m, c] = decay * s_r[m, c] + k_r[m] * u_r[c]
                if rl == 0:
                    for c in T.vectorized(VEC):
                        o[t, hv, col0 + c] = o_r[c]

            if flags // 2 % 2 == 1:
                for m in T.unroll(RPT):
                    for c in T.vectorized(VEC):
                        ht[n, hv, row0 + m, col0 + c] = s_r[m, c]

    return recurrent_fwd
