"""CUDA device helpers of the chunk inverse in registers (inverse_regs.py: the plan, the fragment layouts and
the steps A..D they implement). aot.add_device_helpers inserts them into a kernel's generated source when it calls
`flashqla_inv_diag`. No TileLang import here: aot imports this module."""

# CUDA helpers, defined in the generated source of a kernel that calls them (aot._DEVICE_HELPERS); local arrays pass
# by pointer with constant indices, which nvcc keeps in registers once inlined.
CUDA_HELPERS = r"""
// flashqla: the chunk inverse in registers (flashqla_kernels/inverse_regs.py)
#define FLASHQLA_XH 72
__device__ __forceinline__ unsigned flashqla_h2(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ unsigned flashqla_movt(unsigned x) {
  unsigned y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}
__device__ __forceinline__ void flashqla_mma8(float* d, unsigned a0, unsigned a1, unsigned b) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) : "r"(a0), "r"(a1), "r"(b));
}
__device__ __forceinline__ void flashqla_mma16(float* d, const unsigned* a, unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
               "{%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// lane's row address for an ldmatrix / stmatrix .x4 of the 16 x 16 block at (r0, c0) of xh: matrix m = lane / 8 is
// (row half m % 2, column half m / 2)
__device__ __forceinline__ unsigned flashqla_xh_block(const void* xh, int r0, int c0, int lane) {
  const unsigned short* p = static_cast<const unsigned short*>(xh)
      + (r0 + 8 * ((lane >> 3) & 1) + (lane & 7)) * FLASHQLA_XH + c0 + 8 * (lane >> 4);
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void flashqla_ldsm_t(unsigned* r, unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr) : "memory");
}
// the 16 x 16 block of 8 C-fragment floats f (register order 4 q + 2 h + e) to xh, fp16
__device__ __forceinline__ void flashqla_stsm_f16(unsigned addr, const float* f) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};"
               :: "r"(addr), "r"(flashqla_h2(f[0], f[1])), "r"(flashqla_h2(f[2], f[3])),
                  "r"(flashqla_h2(f[4], f[5])), "r"(flashqla_h2(f[6], f[7])) : "memory");
}
// 8 C-fragment floats of a 16 x 16 block (scaled by s) as an m16n8k16 A operand
__device__ __forceinline__ void flashqla_a_op(unsigned* a, const float* f, float s) {
  a[0] = flashqla_h2(s * f[0], s * f[1]);
  a[1] = flashqla_h2(s * f[2], s * f[3]);
  a[2] = flashqla_h2(s * f[4], s * f[5]);
  a[3] = flashqla_h2(s * f[6], s * f[7]);
}
// lane (g, t) holds row g, columns 2 t, 2 t + 1 of an 8 x 8 strictly lower triangular L (a0, a1; zero on and above
// the diagonal); x gets the same entries of (I + L)^-1: X_g = e_g - sum_{j < g} L_gj X_j, row j final at step j
__device__ __forceinline__ void flashqla_inv8(float a0, float a1, float* x, int lane) {
  const int g = lane >> 2, t = lane & 3;
  float l[7];
#pragma unroll
  for (int j = 0; j < 7; ++j) l[j] = __shfl_sync(0xffffffffu, (j & 1) ? a1 : a0, (g << 2) | (j >> 1));
  x[0] = (2 * t == g) ? 1.f : 0.f;
  x[1] = (2 * t + 1 == g) ? 1.f : 0.f;
#pragma unroll
  for (int j = 0; j < 7; ++j) {
    const float y0 = __shfl_sync(0xffffffffu, x[0], (j << 2) | t);
    const float y1 = __shfl_sync(0xffffffffu, x[1], (j << 2) | t);
    x[0] = fmaf(-l[j], y0, x[0]);
    x[1] = fmaf(-l[j], y1, x[1]);
  }
}
// step A, warp I: the inverse of its 16 x 16 diagonal block of I + L~ (l: L~'s row stripe) into s[8 I .. 8 I + 7];
// stored to xh at (16 I, 16 I) when store
__device__ __forceinline__ void flashqla_inv_diag(const float* l, float* s, int I, int lane, void* xh, int store) {
  const float* d = l + 8 * I;
  float* x = s + 8 * I;
  flashqla_inv8(d[0], d[1], x, lane);      // X_00 (rows g, left columns)
  flashqla_inv8(d[6], d[7], x + 6, lane);  // X_11 (rows g + 8, right columns)
  float t[4] = {0.f, 0.f, 0.f, 0.f};
  float u[4] = {0.f, 0.f, 0.f, 0.f};
  flashqla_mma8(t, flashqla_h2(d[2], d[3]), 0u, flashqla_movt(flashqla_h2(x[0], x[1])));     // L_10 X_00
  flashqla_mma8(u, flashqla_h2(-x[6], -x[7]), 0u, flashqla_movt(flashqla_h2(t[0], t[1])));   // -X_11 (L_10 X_00)
  x[2] = u[0];
  x[3] = u[1];
  x[4] = 0.f;
  x[5] = 0.f;
  if (store) flashqla_stsm_f16(flashqla_xh_block(xh, 16 * I, 16 * I, lane), x);
}
// step B, warp I (1 or 3): X_{I,I-1} = -X_II L_{I,I-1} X_{I-1,I-1} into s[8 (I - 1) ..]; stored to xh when store
__device__ __forceinline__ void flashqla_inv_merge32(const float* l, float* s, int I, int lane, void* xh, int store) {
  const int J = I - 1;
  unsigned a[4], b[4];
  float t[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
  flashqla_a_op(a, l + 8 * J, 1.f);
  flashqla_ldsm_t(b, flashqla_xh_block(xh, 16 * J, 16 * J, lane));
  flashqla_mma16(t, a, b[0], b[1]);
  flashqla_mma16(t + 4, a, b[2], b[3]);
  flashqla_a_op(a, s + 8 * I, -1.f);
  float* o = s + 8 * J;
#pragma unroll
  for (int r = 0; r < 8; ++r) o[r] = 0.f;
#pragma unroll
  for (int n = 0; n < 2; ++n)
    flashqla_mma16(o + 4 * n, a, flashqla_movt(flashqla_h2(t[4 * n], t[4 * n + 1])),
                   flashqla_movt(flashqla_h2(t[4 * n + 2], t[4 * n + 3])));
  if (store) flashqla_stsm_f16(flashqla_xh_block(xh, 16 * I, 16 * J, lane), o);
}
// step C, warp I (2 or 3): T_I = L~_{I,0:32} X_hi (X_hi: xh's rows and columns 0..31, upper-right block zero) to xh's
// rows 32 + 16 (I - 2) .., columns 0..31 (fp16)
__device__ __forceinline__ void flashqla_inv_rows_hi(const float* l, int I, int lane, void* xh) {
  unsigned a[4], b[4];
  float t[16];
#pragma unroll
  for (int r = 0; r < 16; ++r) t[r] = 0.f;
  flashqla_a_op(a, l, 1.f);
  flashqla_ldsm_t(b, flashqla_xh_block(xh, 0, 0, lane));
  flashqla_mma16(t, a, b[0], b[1]);
  flashqla_mma16(t + 4, a, b[2], b[3]);
  flashqla_a_op(a, l + 8, 1.f);
  flashqla_ldsm_t(b, flashqla_xh_block(xh, 16, 0, lane));
  flashqla_mma16(t, a, b[0], b[1]);
  flashqla_mma16(t + 4, a, b[2], b[3]);
  flashqla_ldsm_t(b, flashqla_xh_block(xh, 16, 16, lane));
  flashqla_mma16(t + 8, a, b[0], b[1]);
  flashqla_mma16(t + 12, a, b[2], b[3]);
  flashqla_stsm_f16(flashqla_xh_block(xh, 32 + 16 * (I - 2), 0, lane), t);
  flashqla_stsm_f16(flashqla_xh_block(xh, 32 + 16 * (I - 2), 16, lane), t + 8);
}
// step D, warp I (2 or 3): X_{I,0:32} = -sum_{K=2..I} X_IK T_K into s[0 .. 15]
__device__ __forceinline__ void flashqla_inv_rows_lo(float* s, int I, int lane, const void* xh) {
  unsigned a[4], b[4];
  float o[16];
#pragma unroll
  for (int r = 0; r < 16; ++r) o[r] = 0.f;
#pragma unroll
  for (int K = 2; K <= I; ++K) {
    flashqla_a_op(a, s + 8 * K, -1.f);
#pragma unroll
    for (int p = 0; p < 2; ++p) {
      flashqla_ldsm_t(b, flashqla_xh_block(xh, 32 + 16 * (K - 2), 16 * p, lane));
      flashqla_mma16(o + 8 * p, a, b[0], b[1]);
      flashqla_mma16(o + 8 * p + 4, a, b[2], b[3]);
    }
  }
#pragma unroll
  for (int r = 0; r < 16; ++r) s[r] = o[r];
}
"""
