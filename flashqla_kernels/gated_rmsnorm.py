"""Gated RMSNorm of the GDN output: out = (w * rmsnorm(x)) * silu(z), per row of `dim` channels.

Inputs:
    x       [R, D]   bf16/fp16, the GDN output (one row per token and value head)
    z       [R, D]   bf16/fp16, the gate
    weight  [D]      bf16/fp16
    eps     fp32 run-time scalar
Output:
    out     [R, D]   x's dtype
Rounding follows transformers' Qwen3.5 / Qwen3-Next RMSNormGated step for step: the normalised row is
rounded to the input dtype, multiplied by the weight and rounded again, then multiplied by silu(z) in fp32
and rounded once more; the mean of squares is taken in fp32.

Tile plan: one CTA of `threads` threads per `block_r` rows; the rows arrive in fp32 registers, the sum of
squares is a fragment reduction along D, and every element is written once.
"""


import tilelang
import tilelang.language as T

LOG2E = 1.4426950408889634


def gated_rmsnorm_program(dtype: str = "bfloat16", dim: int = 128, block_r: int = 32, threads: int = 128):
    D, BR = dim, block_r
    num_rows = T.dynamic("num_rows")
    acc = "float32"

    @T.prim_func
    def gated_rmsnorm(
        x: T.Tensor((num_rows, D), dtype),
        z: T.Tensor((num_rows, D), dtype),
        weight: T.Tensor((D,), dtype),
        out: T.Tensor((num_rows, D), dtype),
        eps: T.float32,
    ):
        with T.Kernel(T.ceildiv(num_rows, BR), threads=threads) as rb:
            r0 = rb * BR
            x_f = T.alloc_fragment((BR, D), acc)
            sq_f = T.alloc_fragment((BR, D), acc)
            ss_f = T.alloc_fragment((BR,), acc)
            for i, j in T.Parallel(BR, D):
                x_f[i, j] = T.if_then_else(r0 + i < num_rows, T.cast(x[r0 + i, j], acc), 0.0)
            for i, j in T.Parallel(BR, D):
                sq_f[i, j] = x_f[i, j] * x_f[i, j]
            T.reduce_sum(sq_f, ss_f, dim=1)
            for i, j in T.Parallel(BR, D):
                if r0 + i < num_rows:
                    xn = T.cast(T.cast(x_f[i, j] * T.rsqrt(ss_f[i] / D + eps), dtype), acc)
                    y = T.cast(T.cast(T.cast(weight[j], acc) * xn, dtype), acc)
                    zz = T.cast(z[r0 + i, j], acc)
                    out[r0 + i, j] = T.cast(y * (zz / (1.0 + T.exp2(-zz * LOG2E))), dtype)

    return gated_rmsnorm
