"""Causal depthwise conv + SiLU over the packed q|k|v projection, written straight into q, k and v.

Inputs (tokens of all sequences packed along one axis, T tokens, N sequences):
    x            [T, CQ]         bf16/fp16, CQ = 2 * KD + VD channels: q | k | v (transformers' mixed_qkv)
    w            [CQ, W]         conv taps (W = `width`, 4 in every Qwen3.5 / Qwen3-Next checkpoint);
                                 tap j multiplies the input W - 1 - j tokens back
    bias         [CQ]            read only when flags & 2
    left         [N, CQ, W - 1]  the W - 1 inputs before each sequence (a cache's conv state), read only
                                 when flags & 1; otherwise tokens before a sequence start are zero
    cu_seqlens   [N + 1]         int32; chunk_offsets [N + 1] int32 (chunk of `block_t` tokens -> sequence)
Outputs:
    q [T, KD], k [T, KD], v [T, VD]   silu(conv(x) + bias), each contiguous, rounded once from fp32
    (the conv result is rounded to the input dtype before the SiLU, as transformers' torch path does).

Tile plan: one CTA of `threads` threads per (chunk of `block_t` tokens of one sequence, `block_c`
channels): the block_t + W - 1 input rows are staged once in shared memory (coalesced rows, fp32), the taps
and bias of its channels beside them, and every output is one independent W-term dot product, stored once. A chunk never reads across its
sequence's start (it takes `left` or zeros there) and never writes past its end. The grid is sized from
shapes alone (T // block_t + N + 1 chunk slots), so no host synchronisation is needed.
"""


import tilelang
import tilelang.language as T

from .seq_lookup import sequence_of_chunk


def _taps(w_s, x_s, i, j, width):
    """bias + sum_u w[u] x[i + u] for one output, built at trace time as a single expression."""
    y = w_s[j, width]
    for u in range(width):
        y = y + w_s[j, u] * x_s[i + u, j]
    return y


def conv_qkv_program(dtype: str = "bfloat16", width: int = 4, block_t: int = 64, block_c: int = 128,
                     threads: int = 256):
    W, BT, BC = width, block_t, block_c
    assert BT == 64, "the runtime's chunk_offsets count 64-token chunks (ops.CHUNK)"
    num_tokens = T.dynamic("num_tokens")
    num_ch = T.dynamic("num_ch")
    key_dim = T.dynamic("key_dim")
    value_dim = T.dynamic("value_dim")
    num_seqs_p1 = T.dynamic("num_seqs_p1")
    acc = "float32"

    @T.prim_func
    def conv_qkv(
        x: T.Tensor((num_tokens, num_ch), dtype),
        w: T.Tensor((num_ch, W), dtype),
        bias: T.Tensor((num_ch,), dtype),
        left: T.Tensor((num_seqs_p1, num_ch, W - 1), dtype),
        cu_seqlens: T.Tensor((num_seqs_p1,), "int32"),
        chunk_offsets: T.Tensor((num_seqs_p1,), "int32"),
        q: T.Tensor((num_tokens, key_dim), dtype),
        k: T.Tensor((num_tokens, key_dim), dtype),
        v: T.Tensor((num_tokens, value_dim), dtype),
        flags: T.int32,
    ):
        with T.Kernel(num_tokens // BT + num_seqs_p1, T.ceildiv(num_ch, BC), threads=threads) as (cid, cb):
            x_s = T.alloc_shared((BT + W - 1, BC), acc)
            w_s = T.alloc_shared((BC, W + 1), acc)  # taps, then the bias (0 without one)
            lo = sequence_of_chunk(chunk_offsets, num_seqs_p1, cid)  # the chunk's sequence
            c0 = cb * BC
            start = cu_seqlens[lo]
            t0 = start + (cid - chunk_offsets[lo]) * BT
            t_end = T.min(cu_seqlens[lo + 1], t0 + BT)
            if cid < chunk_offsets[num_seqs_p1 - 1]:
                for j, i in T.Parallel(BC, W + 1):
                    w_s[j, i] = T.if_then_else(
                        c0 + j < num_ch,
                        T.if_then_else(i < W, T.cast(w[c0 + j, T.min(i, W - 1)], acc),
                                       T.if_then_else(flags // 2 % 2 == 1, T.cast(bias[c0 + j], acc), 0.0)),
                        0.0)
                # rows t0 - (W - 1) .. t_end - 1; before the sequence start: its left context, or 0
                for i, j in T.Parallel(BT + W - 1, BC):
                    s = t0 - (W - 1) + i
                    x_s[i, j] = T.if_then_else(
                        (s >= start) & (s < t_end) & (c0 + j < num_ch), T.cast(x[s, c0 + j], acc),
                        T.if_then_else((s < start) & (flags % 2 == 1) & (c0 + j < num_ch),
                                       T.cast(left[lo, c0 + j, T.max(W - 1 + s - start, 0)], acc), 0.0))
                for i, j in T.Parallel(BT, BC):
                    y = _taps(w_s, x_s, i, j, W)
                    yr = T.cast(T.cast(y, dtype), acc)  # transformers rounds the conv, then the SiLU
                    out = T.cast(yr / (1.0 + T.exp2(-yr * 1.4426950408889634)), dtype)
                    t = t0 + i
                    c = c0 + j
                    if (t < t_end) & (c < num_ch):
                        if c < key_dim:
                            q[t, c] = out
                        elif c < 2 * key_dim:
                            k[t, c - key_dim] = out
                        else:
                            v[t, c - 2 * key_dim] = out

    return conv_qkv
