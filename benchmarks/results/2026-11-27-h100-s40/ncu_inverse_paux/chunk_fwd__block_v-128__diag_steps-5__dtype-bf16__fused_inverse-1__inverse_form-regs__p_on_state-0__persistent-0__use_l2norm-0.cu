#if defined(_MSC_VER) && !defined(__clang__) && _MSC_VER < 1940
#define _tl_orig_alignas alignas
#define alignas(N) _tl_orig_alignas((N) <= 64 ? (N) : 64)
#include <cuda.h>
#undef alignas
#define alignas _tl_orig_alignas
#endif
#include <tl_templates/cuda/instruction/wgmma.h>
#include <tl_templates/cuda/intrin.h>
#include <tl_templates/cuda/barrier.h>
#include <tl_templates/cuda/copy_sm90.h>
#include <tl_templates/cuda/reduce.h>
#include <tl_templates/cuda/scan.h>
#include <tl_templates/cuda/ldsm.h>
#include <tl_templates/cuda/threadblock_swizzle.h>
#include <tl_templates/cuda/debug.h>
#ifdef ENABLE_BF16
#include <tl_templates/cuda/cuda_bf16_fallbacks.cuh>
#endif


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

extern "C" __global__ void chunk_fwd_kernel(const int* cu_seqlens, const float* h0, float* ht, __grid_constant__ const CUtensorMap k_desc, bfloat16_t* o, __grid_constant__ const CUtensorMap o_desc, __grid_constant__ const CUtensorMap q_desc, __grid_constant__ const CUtensorMap rows_desc, __grid_constant__ const CUtensorMap v_desc, int flags, int hv_base, int launch_heads, int num_ctas, int num_k_heads, int num_seqs_p1, int num_tokens, int num_v_heads, float scale);
extern "C" __global__ void __launch_bounds__(512, 1) chunk_fwd_kernel(const int* cu_seqlens, const float* h0, float* ht, __grid_constant__ const CUtensorMap k_desc, bfloat16_t* o, __grid_constant__ const CUtensorMap o_desc, __grid_constant__ const CUtensorMap q_desc, __grid_constant__ const CUtensorMap rows_desc, __grid_constant__ const CUtensorMap v_desc, int flags, int hv_base, int launch_heads, int num_ctas, int num_k_heads, int num_seqs_p1, int num_tokens, int num_v_heads, float scale) {
  extern __shared__ __align__(1024) uchar buf_dyn_shmem[];
  void* a_s = ((void*)((char*)buf_dyn_shmem + 0));
  void* k_s = ((void*)((char*)buf_dyn_shmem + 16384));
  void* q_s = ((void*)((char*)buf_dyn_shmem + 65536));
  void* v_s = ((void*)((char*)buf_dyn_shmem + 114688));
  void* o_s = ((void*)((char*)buf_dyn_shmem + 163840));
  void* p_s = ((void*)((char*)buf_dyn_shmem + 180224));
  void* xh_s = ((void*)((char*)buf_dyn_shmem + 196608));
  void* fac_flat = ((void*)((char*)buf_dyn_shmem + 205824));
  void* of_s = ((void*)((char*)buf_dyn_shmem + 208896));
  __shared__ __align__(16) uint64_t full_mem[3];
  auto full = reinterpret_cast<Barrier*>(full_mem);
  __shared__ __align__(16) uint64_t fac_ready_mem[3];
  auto fac_ready = reinterpret_cast<Barrier*>(fac_ready_mem);
  __shared__ __align__(16) uint64_t empty_mem[3];
  auto empty = reinterpret_cast<Barrier*>(empty_mem);
  __shared__ __align__(16) uint64_t p_ready_mem[2];
  auto p_ready = reinterpret_cast<Barrier*>(p_ready_mem);
  __shared__ __align__(16) uint64_t p_used_mem[2];
  auto p_used = reinterpret_cast<Barrier*>(p_used_mem);
  __shared__ __align__(16) uint64_t a_ready_mem[2];
  auto a_ready = reinterpret_cast<Barrier*>(a_ready_mem);
  int p = 0;
  int it_n[1];
  int it_start[1];
  int it_end[1];
  int it_hv[1];
  int it_hk[1];
  float st_f[64];
  float ot_f[32];
  int gl_row = 0;
  float gl = 0x0p+0f/*0.000000e+00*/;
  bfloat16_t st_h0[32];
  bfloat16_t st_h1[32];
  float z_f[32];
  bfloat16_t vt_b[32];
  bfloat16_t w_b[32];
  float fw_f[16];
  bfloat16_t vn_b[32];
  float kk_f[32];
  float gr[2];
  float gcol[16];
  float bcol[16];
  float lr[32];
  float sr[32];
  float p_f[32];
  float gq_f[16];
  float gr_f[2];
  bfloat16_t pb_f[32];
  int fl_row[1];
  if (tl::tl_shuffle_elect<0>()) {
    tl::prefetch_tma_descriptor(o_desc);
    tl::prefetch_tma_descriptor(q_desc);
    tl::prefetch_tma_descriptor(k_desc);
    tl::prefetch_tma_descriptor(v_desc);
    tl::prefetch_tma_descriptor(rows_desc);
  }
  if (tl::tl_shuffle_elect<0>()) {
    full[0].init(32);
    full[1].init(32);
    full[2].init(32);
    fac_ready[0].init(64);
    fac_ready[1].init(64);
    fac_ready[2].init(64);
    empty[0].init(384);
    empty[1].init(384);
    empty[2].init(384);
    p_ready[0].init(128);
    p_ready[1].init(128);
    p_used[0].init(256);
    p_used[1].init(256);
    a_ready[0].init(128);
    a_ready[1].init(128);
  }
  tl::fence_barrier_init();
  __syncthreads();
  if ((((int)threadIdx.x) >> 7) < ((((int)threadIdx.x) & 7) >> 1)) {
    #pragma unroll
    for (int i = 0; i < 2; ++i) {
      bfloat16_t broadcast_var = bfloat16_t(0x0p+0f/*0.000000e+00*/);
      *(uint4*)(((bfloat16_t*)a_s) + ((((i * 4096) + (((((int)threadIdx.x) & 7) >> 1) * 1024)) + ((((int)threadIdx.x) >> 3) * 16)) + (((((((int)threadIdx.x) & 63) >> 5) + (((int)threadIdx.x) & 1)) & 1) * 8))) = make_uint4(__pack_nv_bfloat162(broadcast_var, broadcast_var), __pack_nv_bfloat162(broadcast_var, broadcast_var), __pack_nv_bfloat162(broadcast_var, broadcast_var), __pack_nv_bfloat162(broadcast_var, broadcast_var));
    }
  }
  tl::fence_proxy_async();
  __syncthreads();
  if (((int)threadIdx.x) < 256) {
    tl::warpgroup_reg_alloc<192>();
    p = ((int)blockIdx.x);
    int p_1 = p;
    int rmod = (p_1 % launch_heads);
    int rdiv = (p_1 / launch_heads);
    it_n[0] = ((((0 <= launch_heads) && (0 <= rmod)) || ((launch_heads < 0) && (rmod <= 0))) ? rdiv : (rdiv - 1));
    int condval;
    if (((0 <= it_n[0]) && (it_n[0] < num_seqs_p1))) {
      condval = cu_seqlens[it_n[(int64_t)0]];
    } else {
      condval = 0;
    }
    it_start[0] = condval;
    int condval_1;
    if (((-1 <= it_n[0]) && ((it_n[0] + 1) < num_seqs_p1))) {
      condval_1 = cu_seqlens[(((int64_t)it_n[(int64_t)0]) + (int64_t)1)];
    } else {
      condval_1 = 0;
    }
    it_end[0] = condval_1;
    int rmod_1 = (p_1 % launch_heads);
    it_hv[0] = (hv_base + ((((0 <= launch_heads) && (0 <= rmod_1)) || ((launch_heads < 0) && (rmod_1 <= 0))) ? rmod_1 : (rmod_1 + launch_heads)));
    int rmod_2 = (num_v_heads % num_k_heads);
    int rdiv_1 = (num_v_heads / num_k_heads);
    int rmod_3 = (it_hv[0] % ((((0 <= num_k_heads) && (0 <= rmod_2)) || ((num_k_heads < 0) && (rmod_2 <= 0))) ? rdiv_1 : (rdiv_1 - 1)));
    int rmod_4 = (num_v_heads % num_k_heads);
    int rdiv_2 = (num_v_heads / num_k_heads);
    int rdiv_3 = (it_hv[0] / ((((0 <= num_k_heads) && (0 <= rmod_4)) || ((num_k_heads < 0) && (rmod_4 <= 0))) ? rdiv_2 : (rdiv_2 - 1)));
    int rmod_5 = (num_v_heads % num_k_heads);
    int rdiv_4 = (num_v_heads / num_k_heads);
    int rmod_6 = (num_v_heads % num_k_heads);
    int rdiv_5 = (num_v_heads / num_k_heads);
    it_hk[0] = ((((0 <= ((((0 <= num_k_heads) && (0 <= rmod_5)) || ((num_k_heads < 0) && (rmod_5 <= 0))) ? rdiv_4 : (rdiv_4 - 1))) && (0 <= rmod_3)) || ((((((0 <= num_k_heads) && (0 <= rmod_6)) || ((num_k_heads < 0) && (rmod_6 <= 0))) ? rdiv_5 : (rdiv_5 - 1)) < 0) && (rmod_3 <= 0))) ? rdiv_3 : (rdiv_3 - 1));
    int n = it_n[0];
    int hv = it_hv[0];
    int seq_start = it_start[0];
    int seq_end = it_end[0];
    if ((flags & 1) == 1) {
      #pragma unroll
      for (int i_1 = 0; i_1 < 64; ++i_1) {
        float condval_2;
        if (((((n < num_seqs_p1) && (0 <= n)) && (hv < num_v_heads)) && (0 <= hv))) {
          condval_2 = h0[((((((((((int64_t)hv) * (int64_t)16384) + ((((int64_t)n) * ((int64_t)num_v_heads)) * (int64_t)16384)) + ((((int64_t)i_1) >> (int64_t)2) * (int64_t)1024)) + ((((int64_t)((int)threadIdx.x)) & (int64_t)3) * (int64_t)256)) + ((((int64_t)i_1) & (int64_t)1) * (int64_t)128)) + ((((int64_t)((int)threadIdx.x)) >> (int64_t)5) * (int64_t)16)) + (((((int64_t)i_1) & (int64_t)3) >> (int64_t)1) * (int64_t)8)) + ((((int64_t)((int)threadIdx.x)) & (int64_t)31) >> (int64_t)2))];
        } else {
          condval_2 = 0x0p+0f/*0.000000e+00*/;
        }
        st_f[i_1] = condval_2;
      }
    } else {
      #pragma unroll
      for (int i_2 = 0; i_2 < 16; ++i_2) {
        float broadcast_var_1 = 0x0p+0f/*0.000000e+00*/;
        *(float4*)(st_f + (i_2 * 4)) = make_float4(broadcast_var_1, broadcast_var_1, broadcast_var_1, broadcast_var_1);
      }
    }
    for (int gc = 0; gc < (((seq_end + 63) - seq_start) >> 6); ++gc) {
      full[(gc % 3)].wait(((gc % 6) / 3));
      gl_row = ((((gc % 3) * 256) + min(64, ((seq_end - seq_start) - (gc * 64)))) - 1);
      gl = exp2f(((float*)fac_flat)[gl_row]);
      #pragma unroll
      for (int i_3 = 0; i_3 < 8; ++i_3) {
        uint2 __1;
        float4 v_ = *(float4*)(st_f + (i_3 * 4));
        (reinterpret_cast<__nv_bfloat162*>(&__1))[0] = __float22bfloat162_rn(((float2*)(&v_))[0]);
        (reinterpret_cast<__nv_bfloat162*>(&__1))[1] = __float22bfloat162_rn(((float2*)(&v_))[1]);
        *(uint2*)(st_h0 + (i_3 * 4)) = __1;
      }
      #pragma unroll
      for (int i_4 = 0; i_4 < 8; ++i_4) {
        uint2 __2;
        float4 v__1 = *(float4*)(st_f + ((i_4 * 4) + 32));
        (reinterpret_cast<__nv_bfloat162*>(&__2))[0] = __float22bfloat162_rn(((float2*)(&v__1))[0]);
        (reinterpret_cast<__nv_bfloat162*>(&__2))[1] = __float22bfloat162_rn(((float2*)(&v__1))[1]);
        *(uint2*)(st_h1 + (i_4 * 4)) = __2;
      }
      {
        tl::GmmaDescriptor desc_b;
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_b, (&(((bfloat16_t*)k_s)[0])));
        tl::increase_descriptor_offset<int>(desc_b, ((gc % 3) * 16384));
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(st_h0 + 0), 16);
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(z_f + 0), 64);
        tl::warpgroup_arrive();
        #pragma unroll
        for (int ki = 0; ki < 4; ++ki) {
          tl::wgmma_rs<tl::DataType::kBFloat16, tl::DataType::kBFloat16, tl::DataType::kFloat32, 64, 64, 16, false, false, 1, 1>(reinterpret_cast<const uint32_t*>(st_h0 + (ki * 8)), uint64_t(desc_b + ((ki * 32) >> 4)), reinterpret_cast<uint32_t*>(z_f + 0), ((0 < ki) ? 1 : 0));
        }
        tl::warpgroup_commit_batch();
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(z_f + 0), 64);
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(st_h0 + 0), 16);
      }
      {
        tl::GmmaDescriptor desc_b_1;
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_b_1, (&(((bfloat16_t*)k_s)[0])));
        tl::increase_descriptor_offset<int>(desc_b_1, (((gc % 3) * 16384) + 8192));
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(st_h1 + 0), 16);
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(z_f + 0), 64);
        tl::warpgroup_arrive();
        #pragma unroll
        for (int ki_1 = 0; ki_1 < 4; ++ki_1) {
          tl::wgmma_rs<tl::DataType::kBFloat16, tl::DataType::kBFloat16, tl::DataType::kFloat32, 64, 64, 16, false, false, 1, 1>(reinterpret_cast<const uint32_t*>(st_h1 + (ki_1 * 8)), uint64_t(desc_b_1 + ((ki_1 * 32) >> 4)), reinterpret_cast<uint32_t*>(z_f + 0), 1);
        }
        tl::warpgroup_commit_batch();
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(z_f + 0), 64);
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(st_h1 + 0), 16);
      }
      if (0 < gc) {
        tl::tma_store_wait<0, true>();
        tl::__sync_thread_partial(12, 256);
        #pragma unroll
        for (int m2 = 0; m2 < 4; ++m2) {
          tl::ptx_stmatrix_x4_trans((&(((bfloat16_t*)o_s)[((((((((((int)threadIdx.x) >> 7) * 4096) + (m2 * 1024)) + (((((int)threadIdx.x) & 31) >> 4) * 512)) + ((((int)threadIdx.x) & 7) * 64)) + (((((((int)threadIdx.x) & 127) >> 6) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 32)) + (((((((int)threadIdx.x) & 63) >> 5) + ((((int)threadIdx.x) & 3) >> 1)) & 1) * 16)) + (((((((int)threadIdx.x) & 15) >> 3) + (((int)threadIdx.x) & 1)) & 1) * 8))])), __pack_nv_bfloat162(((bfloat16_t)ot_f[(m2 * 8)]), ((bfloat16_t)ot_f[((m2 * 8) + 1)])), __pack_nv_bfloat162(((bfloat16_t)ot_f[((m2 * 8) + 2)]), ((bfloat16_t)ot_f[((m2 * 8) + 3)])), __pack_nv_bfloat162(((bfloat16_t)ot_f[((m2 * 8) + 4)]), ((bfloat16_t)ot_f[((m2 * 8) + 5)])), __pack_nv_bfloat162(((bfloat16_t)ot_f[((m2 * 8) + 6)]), ((bfloat16_t)ot_f[((m2 * 8) + 7)])));
        }
        tl::fence_proxy_async();
        tl::__sync_thread_partial(12, 256);
        if (tl::tl_shuffle_elect<256>()) {
          #pragma unroll
          for (int i_5 = 0; i_5 < 2; ++i_5) {
            tl::tma_store(o_desc, (&(((bfloat16_t*)o_s)[(i_5 * 4096)])), (i_5 * 64), (((gc * 64) + seq_start) - 64), hv);
          }
          tl::tma_store_arrive();
        }
      }
      {
        tl::GmmaDescriptor desc_b_2;
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_b_2, (&(((bfloat16_t*)q_s)[0])));
        tl::increase_descriptor_offset<int>(desc_b_2, ((gc % 3) * 16384));
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(st_h0 + 0), 16);
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(ot_f + 0), 64);
        tl::warpgroup_arrive();
        #pragma unroll
        for (int ki_2 = 0; ki_2 < 4; ++ki_2) {
          tl::wgmma_rs<tl::DataType::kBFloat16, tl::DataType::kBFloat16, tl::DataType::kFloat32, 64, 64, 16, false, false, 1, 1>(reinterpret_cast<const uint32_t*>(st_h0 + (ki_2 * 8)), uint64_t(desc_b_2 + ((ki_2 * 32) >> 4)), reinterpret_cast<uint32_t*>(ot_f + 0), ((0 < ki_2) ? 1 : 0));
        }
        tl::warpgroup_commit_batch();
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(ot_f + 0), 64);
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(st_h0 + 0), 16);
      }
      {
        tl::GmmaDescriptor desc_b_3;
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_b_3, (&(((bfloat16_t*)q_s)[0])));
        tl::increase_descriptor_offset<int>(desc_b_3, (((gc % 3) * 16384) + 8192));
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(st_h1 + 0), 16);
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(ot_f + 0), 64);
        tl::warpgroup_arrive();
        #pragma unroll
        for (int ki_3 = 0; ki_3 < 4; ++ki_3) {
          tl::wgmma_rs<tl::DataType::kBFloat16, tl::DataType::kBFloat16, tl::DataType::kFloat32, 64, 64, 16, false, false, 1, 1>(reinterpret_cast<const uint32_t*>(st_h1 + (ki_3 * 8)), uint64_t(desc_b_3 + ((ki_3 * 32) >> 4)), reinterpret_cast<uint32_t*>(ot_f + 0), 1);
        }
        tl::warpgroup_commit_batch();
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(ot_f + 0), 64);
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(st_h1 + 0), 16);
      }
      #pragma unroll
      for (int m = 0; m < 4; ++m) {
        tl::ptx_ldmatrix_x4_trans((&(((bfloat16_t*)v_s)[(((((((((gc % 3) * 8192) + ((((int)threadIdx.x) >> 7) * 4096)) + (m * 1024)) + (((((int)threadIdx.x) & 31) >> 4) * 512)) + ((((int)threadIdx.x) & 7) * 64)) + (((((((int)threadIdx.x) & 127) >> 6) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 32)) + (((((((int)threadIdx.x) & 63) >> 5) + ((((int)threadIdx.x) & 3) >> 1)) & 1) * 16)) + (((((((int)threadIdx.x) & 15) >> 3) + (((int)threadIdx.x) & 1)) & 1) * 8))])), (&(vt_b[(m * 8)])));
      }
      fac_ready[(gc % 3)].wait(((gc % 6) / 3));
      tl::wait_wgmma<1>();
      #pragma unroll
      for (int i_6 = 0; i_6 < 16; ++i_6) {
        float fac_s_local_cast[2];
        *(float2*)(fac_s_local_cast + 0) = *(float2*)(((float*)fac_flat) + (((((gc % 3) * 256) + ((i_6 >> 1) * 8)) + ((((int)threadIdx.x) & 3) * 2)) + 128));
        uint1 __3;
        float2 __4;
          float2 __5;
          uint1 v__2 = *(uint1*)(vt_b + (i_6 * 2));
          ((float2*)(&__5))[0] = __bfloat1622float2((reinterpret_cast<__nv_bfloat162*>(&v__2))[0]);
          float2 __6;
            float2 v__3 = *(float2*)(z_f + (i_6 * 2));
            float2 v__4 = *(float2*)(fac_s_local_cast + 0);
            __6.x = (v__3.x*v__4.x);
            __6.y = (v__3.y*v__4.y);
          __4.x = (__5.x-__6.x);
          __4.y = (__5.y-__6.y);
        (reinterpret_cast<__nv_bfloat162*>(&__3))[0] = __float22bfloat162_rn(((float2*)(&__4))[0]);
        *(uint1*)(w_b + (i_6 * 2)) = __3;
      }
            int condval_3;
      if (((gc % 2) == 0)) {
        condval_3 = 0;
      } else {
        condval_3 = 0;
      }
a_ready[(gc & 1)].wait((((gc >> 1) + condval_3) & 1));
      {
        tl::GmmaDescriptor desc_b_4;
        tl::initialize_wgmma_descriptor<3, 1, 16>(desc_b_4, (&(((bfloat16_t*)a_s)[0])));
        tl::increase_descriptor_offset<int>(desc_b_4, ((gc & 1) * 8192));
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(w_b + 0), 16);
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(z_f + 0), 64);
        tl::warpgroup_arrive();
        #pragma unroll
        for (int ki_4 = 0; ki_4 < 4; ++ki_4) {
          tl::wgmma_rs<tl::DataType::kBFloat16, tl::DataType::kBFloat16, tl::DataType::kFloat32, 64, 64, 16, false, false, 1, 1>(reinterpret_cast<const uint32_t*>(w_b + (ki_4 * 8)), uint64_t(desc_b_4 + ((ki_4 * 2048) >> 4)), reinterpret_cast<uint32_t*>(z_f + 0), ((0 < ki_4) ? 1 : 0));
        }
        tl::warpgroup_commit_batch();
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(z_f + 0), 64);
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(w_b + 0), 16);
      }
      #pragma unroll
      for (int i_7 = 0; i_7 < 16; ++i_7) {
        float4 __7;
          float4 v__5 = *(float4*)(st_f + (i_7 * 4));
          float4 v__6 = make_float4(gl, gl, gl, gl);
          __7.x = (v__5.x*v__6.x);
          __7.y = (v__5.y*v__6.y);
          __7.z = (v__5.z*v__6.z);
          __7.w = (v__5.w*v__6.w);
        *(float4*)(st_f + (i_7 * 4)) = __7;
      }
      #pragma unroll
      for (int i_8 = 0; i_8 < 8; ++i_8) {
        *(float2*)(fw_f + (i_8 * 2)) = *(float2*)(((float*)fac_flat) + (((((gc % 3) * 256) + (i_8 * 8)) + ((((int)threadIdx.x) & 3) * 2)) + 192));
      }
      tl::wait_wgmma<0>();
      #pragma unroll
      for (int i_9 = 0; i_9 < 16; ++i_9) {
        uint1 __8;
        float2 __9;
          float2 v__7 = *(float2*)(z_f + (i_9 * 2));
          float2 v__8 = *(float2*)(fw_f + ((i_9 >> 1) * 2));
          __9.x = (v__7.x*v__8.x);
          __9.y = (v__7.y*v__8.y);
        (reinterpret_cast<__nv_bfloat162*>(&__8))[0] = __float22bfloat162_rn(((float2*)(&__9))[0]);
        *(uint1*)(w_b + (i_9 * 2)) = __8;
      }
      {
        tl::GmmaDescriptor desc_b_5;
        tl::initialize_wgmma_descriptor<1, 512, 64>(desc_b_5, (&(((bfloat16_t*)k_s)[0])));
        tl::increase_descriptor_offset<int>(desc_b_5, ((gc % 3) * 16384));
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(w_b + 0), 16);
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(st_f + 0), 128);
        tl::warpgroup_arrive();
        #pragma unroll
        for (int ki_5 = 0; ki_5 < 4; ++ki_5) {
          tl::wgmma_rs<tl::DataType::kBFloat16, tl::DataType::kBFloat16, tl::DataType::kFloat32, 64, 128, 16, false, true, 1, 1>(reinterpret_cast<const uint32_t*>(w_b + (ki_5 * 8)), uint64_t(desc_b_5 + ((ki_5 * 2048) >> 4)), reinterpret_cast<uint32_t*>(st_f + 0), 1);
        }
        tl::warpgroup_commit_batch();
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(st_f + 0), 128);
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(w_b + 0), 16);
      }
      #pragma unroll
      for (int i_10 = 0; i_10 < 16; ++i_10) {
        float fac_s_local_cast_1[2];
        *(float2*)(fac_s_local_cast_1 + 0) = *(float2*)(((float*)fac_flat) + (((((gc % 3) * 256) + ((i_10 >> 1) * 8)) + ((((int)threadIdx.x) & 3) * 2)) + 64));
        uint1 __10;
        float2 __11;
          float2 v__9 = *(float2*)(z_f + (i_10 * 2));
          float2 v__10 = *(float2*)(fac_s_local_cast_1 + 0);
          __11.x = (v__9.x*v__10.x);
          __11.y = (v__9.y*v__10.y);
        (reinterpret_cast<__nv_bfloat162*>(&__10))[0] = __float22bfloat162_rn(((float2*)(&__11))[0]);
        *(uint1*)(vn_b + (i_10 * 2)) = __10;
      }
            int condval_4;
      if (((gc % 2) == 0)) {
        condval_4 = 0;
      } else {
        condval_4 = 0;
      }
p_ready[(gc & 1)].wait((((gc >> 1) + condval_4) & 1));
      #pragma unroll
      for (int i_11 = 0; i_11 < 16; ++i_11) {
        float2 __12;
          float2 v__11 = *(float2*)(ot_f + (i_11 * 2));
          float2 v__12 = *(float2*)(((float*)of_s) + ((((gc & 1) * 64) + ((i_11 >> 1) * 8)) + ((((int)threadIdx.x) & 3) * 2)));
          __12.x = (v__11.x*v__12.x);
          __12.y = (v__11.y*v__12.y);
        *(float2*)(ot_f + (i_11 * 2)) = __12;
      }
      {
        tl::GmmaDescriptor desc_b_6;
        tl::initialize_wgmma_descriptor<1, 1, 64>(desc_b_6, (&(((bfloat16_t*)p_s)[0])));
        tl::increase_descriptor_offset<int>(desc_b_6, ((gc & 1) * 8192));
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(vn_b + 0), 16);
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(ot_f + 0), 64);
        tl::warpgroup_arrive();
        #pragma unroll
        for (int ki_6 = 0; ki_6 < 4; ++ki_6) {
          tl::wgmma_rs<tl::DataType::kBFloat16, tl::DataType::kBFloat16, tl::DataType::kFloat32, 64, 64, 16, false, false, 1, 1>(reinterpret_cast<const uint32_t*>(vn_b + (ki_6 * 8)), uint64_t(desc_b_6 + ((ki_6 * 32) >> 4)), reinterpret_cast<uint32_t*>(ot_f + 0), 1);
        }
        tl::warpgroup_commit_batch();
        tl::warpgroup_fence_operand(reinterpret_cast<float*>(ot_f + 0), 64);
        tl::warpgroup_fence_operand(reinterpret_cast<uint32_t*>(vn_b + 0), 16);
      }
      tl::wait_wgmma<0>();
      p_used[(gc & 1)].arrive();
      empty[(gc % 3)].arrive();
    }
    if (0 < (seq_end - seq_start)) {
      tl::tma_store_wait<0, true>();
      tl::__sync_thread_partial(12, 256);
      #pragma unroll
      for (int m2_1 = 0; m2_1 < 4; ++m2_1) {
        tl::ptx_stmatrix_x4_trans((&(((bfloat16_t*)o_s)[((((((((((int)threadIdx.x) >> 7) * 4096) + (m2_1 * 1024)) + (((((int)threadIdx.x) & 31) >> 4) * 512)) + ((((int)threadIdx.x) & 7) * 64)) + (((((((int)threadIdx.x) & 127) >> 6) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 32)) + (((((((int)threadIdx.x) & 63) >> 5) + ((((int)threadIdx.x) & 3) >> 1)) & 1) * 16)) + (((((((int)threadIdx.x) & 15) >> 3) + (((int)threadIdx.x) & 1)) & 1) * 8))])), __pack_nv_bfloat162(((bfloat16_t)ot_f[(m2_1 * 8)]), ((bfloat16_t)ot_f[((m2_1 * 8) + 1)])), __pack_nv_bfloat162(((bfloat16_t)ot_f[((m2_1 * 8) + 2)]), ((bfloat16_t)ot_f[((m2_1 * 8) + 3)])), __pack_nv_bfloat162(((bfloat16_t)ot_f[((m2_1 * 8) + 4)]), ((bfloat16_t)ot_f[((m2_1 * 8) + 5)])), __pack_nv_bfloat162(((bfloat16_t)ot_f[((m2_1 * 8) + 6)]), ((bfloat16_t)ot_f[((m2_1 * 8) + 7)])));
      }
      tl::fence_proxy_async();
      tl::__sync_thread_partial(12, 256);
      if ((((((seq_end + 63) - seq_start) >> 6) * 64) + seq_start) <= seq_end) {
        if (tl::tl_shuffle_elect<256>()) {
          #pragma unroll
          for (int i_12 = 0; i_12 < 2; ++i_12) {
            tl::tma_store(o_desc, (&(((bfloat16_t*)o_s)[(i_12 * 4096)])), (i_12 * 64), ((((((seq_end + 63) - seq_start) >> 6) * 64) + seq_start) - 64), hv);
          }
          tl::tma_store_arrive();
        }
      } else {
        if (0 <= hv) {
          #pragma unroll
          for (int i_13 = 0; i_13 < 4; ++i_13) {
            if ((((((((seq_end + 63) - seq_start) >> 6) * 64) + (i_13 * 16)) + (((int)threadIdx.x) >> 4)) + seq_start) < (seq_end + 64)) {
              if (hv < num_v_heads) {
                if (1 <= ((((seq_end + 63) - seq_start) >> 6) + ((((i_13 * 16) + (((int)threadIdx.x) >> 4)) + seq_start) >> 6))) {
                  if ((((((((seq_end + 63) - seq_start) >> 6) * 64) + (i_13 * 16)) + (((int)threadIdx.x) >> 4)) + seq_start) < (num_tokens + 64)) {
                    *(uint4*)(o + (((((int64_t)hv) * (int64_t)128) + ((((((((((((int64_t)seq_end) + (int64_t)63) - ((int64_t)seq_start)) >> (int64_t)6) * (int64_t)64) + (((int64_t)i_13) * (int64_t)16)) + (((int64_t)((int)threadIdx.x)) >> (int64_t)4)) + ((int64_t)seq_start)) - (int64_t)64) * ((int64_t)num_v_heads)) * (int64_t)128)) + ((((int64_t)((int)threadIdx.x)) & (int64_t)15) * (int64_t)8))) = *(uint4*)(((bfloat16_t*)o_s) + ((((((((((int)threadIdx.x) & 15) >> 3) * 4096) + (i_13 * 1024)) + ((((int)threadIdx.x) >> 4) * 64)) + (((((((int)threadIdx.x) & 127) >> 6) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 32)) + (((((((int)threadIdx.x) & 63) >> 5) + ((((int)threadIdx.x) & 3) >> 1)) & 1) * 16)) + (((((((int)threadIdx.x) & 31) >> 4) + (((int)threadIdx.x) & 1)) & 1) * 8)));
                  }
                }
              }
            }
          }
        }
      }
    }
    tl::tma_store_wait<0, true>();
    if (((flags & 3) >> 1) == 1) {
      if ((((n < num_seqs_p1) && (0 <= n)) && (hv < num_v_heads)) && (0 <= hv)) {
        #pragma unroll
        for (int i_14 = 0; i_14 < 64; ++i_14) {
          ht[((((((((((int64_t)hv) * (int64_t)16384) + ((((int64_t)n) * ((int64_t)num_v_heads)) * (int64_t)16384)) + ((((int64_t)i_14) >> (int64_t)2) * (int64_t)1024)) + ((((int64_t)((int)threadIdx.x)) & (int64_t)3) * (int64_t)256)) + ((((int64_t)i_14) & (int64_t)1) * (int64_t)128)) + ((((int64_t)((int)threadIdx.x)) >> (int64_t)5) * (int64_t)16)) + (((((int64_t)i_14) & (int64_t)3) >> (int64_t)1) * (int64_t)8)) + ((((int64_t)((int)threadIdx.x)) & (int64_t)31) >> (int64_t)2))] = st_f[i_14];
        }
      }
    }
  } else {
    if (((int)threadIdx.x) < 384) {
      tl::warpgroup_reg_dealloc<104>();
      p = ((int)blockIdx.x);
      int p_2 = p;
      int rmod_7 = (p_2 % launch_heads);
      int rdiv_6 = (p_2 / launch_heads);
      it_n[0] = ((((0 <= launch_heads) && (0 <= rmod_7)) || ((launch_heads < 0) && (rmod_7 <= 0))) ? rdiv_6 : (rdiv_6 - 1));
      int condval_5;
      if (((0 <= it_n[0]) && (it_n[0] < num_seqs_p1))) {
        condval_5 = cu_seqlens[it_n[(int64_t)0]];
      } else {
        condval_5 = 0;
      }
      it_start[0] = condval_5;
      int condval_6;
      if (((-1 <= it_n[0]) && ((it_n[0] + 1) < num_seqs_p1))) {
        condval_6 = cu_seqlens[(((int64_t)it_n[(int64_t)0]) + (int64_t)1)];
      } else {
        condval_6 = 0;
      }
      it_end[0] = condval_6;
      int rmod_8 = (p_2 % launch_heads);
      it_hv[0] = (hv_base + ((((0 <= launch_heads) && (0 <= rmod_8)) || ((launch_heads < 0) && (rmod_8 <= 0))) ? rmod_8 : (rmod_8 + launch_heads)));
      int rmod_9 = (num_v_heads % num_k_heads);
      int rdiv_7 = (num_v_heads / num_k_heads);
      int rmod_10 = (it_hv[0] % ((((0 <= num_k_heads) && (0 <= rmod_9)) || ((num_k_heads < 0) && (rmod_9 <= 0))) ? rdiv_7 : (rdiv_7 - 1)));
      int rmod_11 = (num_v_heads % num_k_heads);
      int rdiv_8 = (num_v_heads / num_k_heads);
      int rdiv_9 = (it_hv[0] / ((((0 <= num_k_heads) && (0 <= rmod_11)) || ((num_k_heads < 0) && (rmod_11 <= 0))) ? rdiv_8 : (rdiv_8 - 1)));
      int rmod_12 = (num_v_heads % num_k_heads);
      int rdiv_10 = (num_v_heads / num_k_heads);
      int rmod_13 = (num_v_heads % num_k_heads);
      int rdiv_11 = (num_v_heads / num_k_heads);
      it_hk[0] = ((((0 <= ((((0 <= num_k_heads) && (0 <= rmod_12)) || ((num_k_heads < 0) && (rmod_12 <= 0))) ? rdiv_10 : (rdiv_10 - 1))) && (0 <= rmod_10)) || ((((((0 <= num_k_heads) && (0 <= rmod_13)) || ((num_k_heads < 0) && (rmod_13 <= 0))) ? rdiv_11 : (rdiv_11 - 1)) < 0) && (rmod_10 <= 0))) ? rdiv_9 : (rdiv_9 - 1));
      int seq_start_1 = it_start[0];
      int seq_end_1 = it_end[0];
      for (int c2 = 0; c2 < (((seq_end_1 + 127) - seq_start_1) >> 7); ++c2) {
        #pragma unroll
        for (int par = 0; par < 2; ++par) {
          if (((c2 * 2) + par) < (((seq_end_1 + 63) - seq_start_1) >> 6)) {
            full[(((c2 * 2) + par) % 3)].wait(((((c2 % 3) * 2) + par) / 3));
            {
              tl::GmmaDescriptor desc_a;
              tl::GmmaDescriptor desc_b_7;
              tl::initialize_wgmma_descriptor<1, 1, 64>(desc_a, (&(((bfloat16_t*)k_s)[0])));
              tl::increase_descriptor_offset<int>(desc_a, ((((c2 * 2) + par) % 3) * 16384));
              tl::initialize_wgmma_descriptor<1, 1, 64>(desc_b_7, (&(((bfloat16_t*)k_s)[0])));
              tl::increase_descriptor_offset<int>(desc_b_7, ((((c2 * 2) + par) % 3) * 16384));
              tl::warpgroup_fence_operand(reinterpret_cast<float*>(kk_f + 0), 32);
              tl::warpgroup_arrive();
              #pragma unroll
              for (int ki_7 = 0; ki_7 < 8; ++ki_7) {
                tl::wgmma_ss<tl::DataType::kBFloat16, tl::DataType::kBFloat16, tl::DataType::kFloat32, 64, 64, 16, false, false, 1, 1>(uint64_t(desc_a + ((((ki_7 >> 2) * 8192) + ((ki_7 & 3) * 32)) >> 4)), uint64_t(desc_b_7 + ((((ki_7 >> 2) * 8192) + ((ki_7 & 3) * 32)) >> 4)), ((uint32_t*)(kk_f + 0)), ((0 < ki_7) ? 1 : 0));
              }
              tl::warpgroup_commit_batch();
              tl::warpgroup_wait<0>();
              tl::warpgroup_fence_operand(reinterpret_cast<float*>(kk_f + 0), 32);
            }
            #pragma unroll
            for (int h = 0; h < 2; ++h) {
              gr[h] = ((float*)fac_flat)[((((((((c2 * 2) + par) % 3) * 256) + ((((int)threadIdx.x) >> 5) * 16)) + (h * 8)) + ((((int)threadIdx.x) & 31) >> 2)) - 128)];
            }
            #pragma unroll
            for (int q = 0; q < 8; ++q) {
              *(float2*)(gcol + (q * 2)) = *(float2*)(((float*)fac_flat) + ((((((c2 * 2) + par) % 3) * 256) + (q * 8)) + ((((int)threadIdx.x) & 3) * 2)));
              *(float2*)(bcol + (q * 2)) = *(float2*)(((float*)fac_flat) + (((((((c2 * 2) + par) % 3) * 256) + (q * 8)) + ((((int)threadIdx.x) & 3) * 2)) + 64));
            }
            #pragma unroll
            for (int q_1 = 0; q_1 < 8; ++q_1) {
              #pragma unroll
              for (int h_1 = 0; h_1 < 2; ++h_1) {
                #pragma unroll
                for (int e = 0; e < 2; ++e) {
                  float condval_7;
                  if (((((((q_1 * 8) + ((((int)threadIdx.x) & 3) * 2)) + e) + 128) < ((((((int)threadIdx.x) >> 5) * 16) + (h_1 * 8)) + ((((int)threadIdx.x) & 31) >> 2))) & (((((((c2 * 128) + (par * 64)) + ((((int)threadIdx.x) >> 5) * 16)) + (h_1 * 8)) + ((((int)threadIdx.x) & 31) >> 2)) + seq_start_1) < (seq_end_1 + 128)))) {
                    condval_7 = ((kk_f[(((q_1 * 4) + (h_1 * 2)) + e)] * bcol[((q_1 * 2) + e)]) * exp2f(min((gr[h_1] - gcol[((q_1 * 2) + e)]), 0x0p+0f/*0.000000e+00*/)));
                  } else {
                    condval_7 = 0x0p+0f/*0.000000e+00*/;
                  }
                  lr[(((q_1 * 4) + (h_1 * 2)) + e)] = condval_7;
                }
              }
            }
            tl::__sync_thread_partial(14, 128);
            if ((((int)threadIdx.x) >> 5) == 8) {
              flashqla_inv_diag((&(lr[0])), (&(sr[0])), 0, (((int)threadIdx.x) & 31), (&(((half_t*)xh_s)[0])), 1);
            }
            if ((((int)threadIdx.x) >> 5) == 9) {
              flashqla_inv_diag((&(lr[0])), (&(sr[0])), 1, (((int)threadIdx.x) & 31), (&(((half_t*)xh_s)[0])), 1);
            }
            if ((((int)threadIdx.x) >> 5) == 10) {
              flashqla_inv_diag((&(lr[0])), (&(sr[0])), 2, (((int)threadIdx.x) & 31), (&(((half_t*)xh_s)[0])), 1);
            }
            if ((((int)threadIdx.x) >> 5) == 11) {
              flashqla_inv_diag((&(lr[0])), (&(sr[0])), 3, (((int)threadIdx.x) & 31), (&(((half_t*)xh_s)[0])), 0);
            }
            tl::__sync_thread_partial(14, 128);
            if ((((int)threadIdx.x) >> 5) == 9) {
              flashqla_inv_merge32((&(lr[0])), (&(sr[0])), 1, (((int)threadIdx.x) & 31), (&(((half_t*)xh_s)[0])), 1);
            }
            if ((((int)threadIdx.x) >> 5) == 11) {
              flashqla_inv_merge32((&(lr[0])), (&(sr[0])), 3, (((int)threadIdx.x) & 31), (&(((half_t*)xh_s)[0])), 0);
            }
            tl::__sync_thread_partial(14, 128);
            if ((((int)threadIdx.x) >> 5) == 10) {
              flashqla_inv_rows_hi((&(lr[0])), 2, (((int)threadIdx.x) & 31), (&(((half_t*)xh_s)[0])));
            }
            if ((((int)threadIdx.x) >> 5) == 11) {
              flashqla_inv_rows_hi((&(lr[0])), 3, (((int)threadIdx.x) & 31), (&(((half_t*)xh_s)[0])));
            }
            tl::__sync_thread_partial(14, 128);
            if ((((int)threadIdx.x) >> 5) == 10) {
              flashqla_inv_rows_lo((&(sr[0])), 2, (((int)threadIdx.x) & 31), (&(((half_t*)xh_s)[0])));
            }
            if ((((int)threadIdx.x) >> 5) == 11) {
              flashqla_inv_rows_lo((&(sr[0])), 3, (((int)threadIdx.x) & 31), (&(((half_t*)xh_s)[0])));
            }
                        int condval_8;
            if ((par == 0)) {
              condval_8 = 0;
            } else {
              condval_8 = 0;
            }
p_used[par].wait((((c2 + condval_8) + 1) & 1));
            if ((((int)threadIdx.x) >> 5) == 8) {
              tl::ptx_stmatrix_x4((&(((bfloat16_t*)a_s)[(((par * 4096) + ((((int)threadIdx.x) & 15) * 16)) + (((((((int)threadIdx.x) & 31) >> 4) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 8))])), __pack_nv_bfloat162(((bfloat16_t)sr[0]), ((bfloat16_t)sr[1])), __pack_nv_bfloat162(((bfloat16_t)sr[2]), ((bfloat16_t)sr[3])), __pack_nv_bfloat162(((bfloat16_t)sr[4]), ((bfloat16_t)sr[5])), __pack_nv_bfloat162(((bfloat16_t)sr[6]), ((bfloat16_t)sr[7])));
            }
            if ((((int)threadIdx.x) >> 5) == 9) {
              tl::ptx_stmatrix_x4((&(((bfloat16_t*)a_s)[((((par * 4096) + ((((int)threadIdx.x) & 15) * 16)) + (((((((int)threadIdx.x) & 31) >> 4) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 8)) + 256)])), __pack_nv_bfloat162(((bfloat16_t)sr[0]), ((bfloat16_t)sr[1])), __pack_nv_bfloat162(((bfloat16_t)sr[2]), ((bfloat16_t)sr[3])), __pack_nv_bfloat162(((bfloat16_t)sr[4]), ((bfloat16_t)sr[5])), __pack_nv_bfloat162(((bfloat16_t)sr[6]), ((bfloat16_t)sr[7])));
              tl::ptx_stmatrix_x4((&(((bfloat16_t*)a_s)[((((par * 4096) + ((((int)threadIdx.x) & 15) * 16)) + (((((((int)threadIdx.x) & 31) >> 4) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 8)) + 1280)])), __pack_nv_bfloat162(((bfloat16_t)sr[8]), ((bfloat16_t)sr[9])), __pack_nv_bfloat162(((bfloat16_t)sr[10]), ((bfloat16_t)sr[11])), __pack_nv_bfloat162(((bfloat16_t)sr[12]), ((bfloat16_t)sr[13])), __pack_nv_bfloat162(((bfloat16_t)sr[14]), ((bfloat16_t)sr[15])));
            }
            if ((((int)threadIdx.x) >> 5) == 10) {
              tl::ptx_stmatrix_x4((&(((bfloat16_t*)a_s)[((((par * 4096) + ((((int)threadIdx.x) & 15) * 16)) + (((((((int)threadIdx.x) & 31) >> 4) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 8)) + 512)])), __pack_nv_bfloat162(((bfloat16_t)sr[0]), ((bfloat16_t)sr[1])), __pack_nv_bfloat162(((bfloat16_t)sr[2]), ((bfloat16_t)sr[3])), __pack_nv_bfloat162(((bfloat16_t)sr[4]), ((bfloat16_t)sr[5])), __pack_nv_bfloat162(((bfloat16_t)sr[6]), ((bfloat16_t)sr[7])));
              tl::ptx_stmatrix_x4((&(((bfloat16_t*)a_s)[((((par * 4096) + ((((int)threadIdx.x) & 15) * 16)) + (((((((int)threadIdx.x) & 31) >> 4) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 8)) + 1536)])), __pack_nv_bfloat162(((bfloat16_t)sr[8]), ((bfloat16_t)sr[9])), __pack_nv_bfloat162(((bfloat16_t)sr[10]), ((bfloat16_t)sr[11])), __pack_nv_bfloat162(((bfloat16_t)sr[12]), ((bfloat16_t)sr[13])), __pack_nv_bfloat162(((bfloat16_t)sr[14]), ((bfloat16_t)sr[15])));
              tl::ptx_stmatrix_x4((&(((bfloat16_t*)a_s)[((((par * 4096) + ((((int)threadIdx.x) & 15) * 16)) + (((((((int)threadIdx.x) & 31) >> 4) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 8)) + 2560)])), __pack_nv_bfloat162(((bfloat16_t)sr[16]), ((bfloat16_t)sr[17])), __pack_nv_bfloat162(((bfloat16_t)sr[18]), ((bfloat16_t)sr[19])), __pack_nv_bfloat162(((bfloat16_t)sr[20]), ((bfloat16_t)sr[21])), __pack_nv_bfloat162(((bfloat16_t)sr[22]), ((bfloat16_t)sr[23])));
            }
            if ((((int)threadIdx.x) >> 5) == 11) {
              tl::ptx_stmatrix_x4((&(((bfloat16_t*)a_s)[((((par * 4096) + ((((int)threadIdx.x) & 15) * 16)) + (((((((int)threadIdx.x) & 31) >> 4) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 8)) + 768)])), __pack_nv_bfloat162(((bfloat16_t)sr[0]), ((bfloat16_t)sr[1])), __pack_nv_bfloat162(((bfloat16_t)sr[2]), ((bfloat16_t)sr[3])), __pack_nv_bfloat162(((bfloat16_t)sr[4]), ((bfloat16_t)sr[5])), __pack_nv_bfloat162(((bfloat16_t)sr[6]), ((bfloat16_t)sr[7])));
              tl::ptx_stmatrix_x4((&(((bfloat16_t*)a_s)[((((par * 4096) + ((((int)threadIdx.x) & 15) * 16)) + (((((((int)threadIdx.x) & 31) >> 4) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 8)) + 1792)])), __pack_nv_bfloat162(((bfloat16_t)sr[8]), ((bfloat16_t)sr[9])), __pack_nv_bfloat162(((bfloat16_t)sr[10]), ((bfloat16_t)sr[11])), __pack_nv_bfloat162(((bfloat16_t)sr[12]), ((bfloat16_t)sr[13])), __pack_nv_bfloat162(((bfloat16_t)sr[14]), ((bfloat16_t)sr[15])));
              tl::ptx_stmatrix_x4((&(((bfloat16_t*)a_s)[((((par * 4096) + ((((int)threadIdx.x) & 15) * 16)) + (((((((int)threadIdx.x) & 31) >> 4) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 8)) + 2816)])), __pack_nv_bfloat162(((bfloat16_t)sr[16]), ((bfloat16_t)sr[17])), __pack_nv_bfloat162(((bfloat16_t)sr[18]), ((bfloat16_t)sr[19])), __pack_nv_bfloat162(((bfloat16_t)sr[20]), ((bfloat16_t)sr[21])), __pack_nv_bfloat162(((bfloat16_t)sr[22]), ((bfloat16_t)sr[23])));
              tl::ptx_stmatrix_x4((&(((bfloat16_t*)a_s)[((((par * 4096) + ((((int)threadIdx.x) & 15) * 16)) + (((((((int)threadIdx.x) & 31) >> 4) + ((((int)threadIdx.x) & 7) >> 2)) & 1) * 8)) + 3840)])), __pack_nv_bfloat162(((bfloat16_t)sr[24]), ((bfloat16_t)sr[25])), __pack_nv_bfloat162(((bfloat16_t)sr[26]), ((bfloat16_t)sr[27])), __pack_nv_bfloat162(((bfloat16_t)sr[28]), ((bfloat16_t)sr[29])), __pack_nv_bfloat162(((bfloat16_t)sr[30]), ((bfloat16_t)sr[31])));
            }
            tl::fence_proxy_async();
            a_ready[par].arrive();
            full[(((c2 * 2) + par) % 3)].wait(((((c2 % 3) * 2) + par) / 3));
            {
              tl::GmmaDescriptor desc_a_1;
              tl::GmmaDescriptor desc_b_8;
              tl::initialize_wgmma_descriptor<1, 1, 64>(desc_a_1, (&(((bfloat16_t*)q_s)[0])));
              tl::increase_descriptor_offset<int>(desc_a_1, ((((c2 * 2) + par) % 3) * 16384));
              tl::initialize_wgmma_descriptor<1, 1, 64>(desc_b_8, (&(((bfloat16_t*)k_s)[0])));
              tl::increase_descriptor_offset<int>(desc_b_8, ((((c2 * 2) + par) % 3) * 16384));
              tl::warpgroup_fence_operand(reinterpret_cast<float*>(p_f + 0), 32);
              tl::warpgroup_arrive();
              #pragma unroll
              for (int ki_8 = 0; ki_8 < 8; ++ki_8) {
                tl::wgmma_ss<tl::DataType::kBFloat16, tl::DataType::kBFloat16, tl::DataType::kFloat32, 64, 64, 16, false, false, 1, 1>(uint64_t(desc_a_1 + ((((ki_8 >> 2) * 8192) + ((ki_8 & 3) * 32)) >> 4)), uint64_t(desc_b_8 + ((((ki_8 >> 2) * 8192) + ((ki_8 & 3) * 32)) >> 4)), ((uint32_t*)(p_f + 0)), ((0 < ki_8) ? 1 : 0));
              }
              tl::warpgroup_commit_batch();
              tl::warpgroup_wait<0>();
              tl::warpgroup_fence_operand(reinterpret_cast<float*>(p_f + 0), 32);
            }
            #pragma unroll
            for (int i_15 = 0; i_15 < 8; ++i_15) {
              *(float2*)(gq_f + (i_15 * 2)) = *(float2*)(((float*)fac_flat) + ((((((c2 * 2) + par) % 3) * 256) + (i_15 * 8)) + ((((int)threadIdx.x) & 3) * 2)));
            }
            #pragma unroll
            for (int i_16 = 0; i_16 < 2; ++i_16) {
              gr_f[i_16] = (((float*)fac_flat)[((((((((c2 * 2) + par) % 3) * 256) + ((((int)threadIdx.x) >> 5) * 16)) + (i_16 * 8)) + ((((int)threadIdx.x) & 31) >> 2)) - 128)] + log2f(scale));
            }
            #pragma unroll
            for (int i_17 = 0; i_17 < 32; ++i_17) {
              float condval_9;
              if ((((((((i_17 >> 2) * 8) + ((((int)threadIdx.x) & 3) * 2)) + (i_17 & 1)) + 128) <= ((((((int)threadIdx.x) >> 5) * 16) + (((i_17 & 3) >> 1) * 8)) + ((((int)threadIdx.x) & 31) >> 2))) & (((((((c2 * 128) + (par * 64)) + ((((int)threadIdx.x) >> 5) * 16)) + (((i_17 & 3) >> 1) * 8)) + ((((int)threadIdx.x) & 31) >> 2)) + seq_start_1) < (seq_end_1 + 128)))) {
                condval_9 = (p_f[i_17] * exp2f((gr_f[((i_17 & 3) >> 1)] - gq_f[(((i_17 >> 2) * 2) + (i_17 & 1))])));
              } else {
                condval_9 = 0x0p+0f/*0.000000e+00*/;
              }
              pb_f[i_17] = ((bfloat16_t)condval_9);
            }
                        int condval_10;
            if ((par == 0)) {
              condval_10 = 0;
            } else {
              condval_10 = 0;
            }
p_used[par].wait((((c2 + condval_10) + 1) & 1));
            #pragma unroll
            for (int i_18 = 0; i_18 < 16; ++i_18) {
              *(uint1*)(((bfloat16_t*)p_s) + (((((((((par * 4096) + ((((int)threadIdx.x) >> 5) * 1024)) + ((i_18 & 1) * 512)) + (((((int)threadIdx.x) & 31) >> 2) * 64)) + (((((((int)threadIdx.x) & 31) >> 4) + (i_18 >> 3)) & 1) * 32)) + (((((((int)threadIdx.x) & 15) >> 3) + ((i_18 & 7) >> 2)) & 1) * 16)) + (((((((int)threadIdx.x) & 7) >> 2) + ((i_18 & 3) >> 1)) & 1) * 8)) + ((((int)threadIdx.x) & 3) * 2)) - 8192)) = *(uint1*)(pb_f + (i_18 * 2));
            }
            if ((((int)threadIdx.x) % 4) == 0) {
              #pragma unroll
              for (int i_19 = 0; i_19 < 2; ++i_19) {
                ((float*)of_s)[(((((par * 64) + ((((int)threadIdx.x) >> 5) * 16)) + (i_19 * 8)) + ((((int)threadIdx.x) & 31) >> 2)) - 128)] = exp2f(gr_f[i_19]);
              }
            }
            tl::fence_proxy_async();
            p_ready[par].arrive();
            empty[(((c2 * 2) + par) % 3)].arrive();
          }
        }
      }
    } else {
      tl::warpgroup_reg_dealloc<24>();
      if ((((int)threadIdx.x) < 416) & (((int)blockIdx.x) < (launch_heads * (num_seqs_p1 - 1)))) {
        int rmod_14 = (((int)blockIdx.x) % launch_heads);
        int rdiv_12 = (((int)blockIdx.x) / launch_heads);
        it_n[0] = ((((0 <= launch_heads) && (0 <= rmod_14)) || ((launch_heads < 0) && (rmod_14 <= 0))) ? rdiv_12 : (rdiv_12 - 1));
        int condval_11;
        if (((0 <= it_n[0]) && (it_n[0] < num_seqs_p1))) {
          condval_11 = cu_seqlens[it_n[(int64_t)0]];
        } else {
          condval_11 = 0;
        }
        it_start[0] = condval_11;
        int condval_12;
        if (((-1 <= it_n[0]) && ((it_n[0] + 1) < num_seqs_p1))) {
          condval_12 = cu_seqlens[(((int64_t)it_n[(int64_t)0]) + (int64_t)1)];
        } else {
          condval_12 = 0;
        }
        it_end[0] = condval_12;
        int rmod_15 = (((int)blockIdx.x) % launch_heads);
        it_hv[0] = (hv_base + ((((0 <= launch_heads) && (0 <= rmod_15)) || ((launch_heads < 0) && (rmod_15 <= 0))) ? rmod_15 : (rmod_15 + launch_heads)));
        int rmod_16 = (num_v_heads % num_k_heads);
        int rdiv_13 = (num_v_heads / num_k_heads);
        int rmod_17 = (it_hv[0] % ((((0 <= num_k_heads) && (0 <= rmod_16)) || ((num_k_heads < 0) && (rmod_16 <= 0))) ? rdiv_13 : (rdiv_13 - 1)));
        int rmod_18 = (num_v_heads % num_k_heads);
        int rdiv_14 = (num_v_heads / num_k_heads);
        int rdiv_15 = (it_hv[0] / ((((0 <= num_k_heads) && (0 <= rmod_18)) || ((num_k_heads < 0) && (rmod_18 <= 0))) ? rdiv_14 : (rdiv_14 - 1)));
        int rmod_19 = (num_v_heads % num_k_heads);
        int rdiv_16 = (num_v_heads / num_k_heads);
        int rmod_20 = (num_v_heads % num_k_heads);
        int rdiv_17 = (num_v_heads / num_k_heads);
        it_hk[0] = ((((0 <= ((((0 <= num_k_heads) && (0 <= rmod_19)) || ((num_k_heads < 0) && (rmod_19 <= 0))) ? rdiv_16 : (rdiv_16 - 1))) && (0 <= rmod_17)) || ((((((0 <= num_k_heads) && (0 <= rmod_20)) || ((num_k_heads < 0) && (rmod_20 <= 0))) ? rdiv_17 : (rdiv_17 - 1)) < 0) && (rmod_17 <= 0))) ? rdiv_15 : (rdiv_15 - 1));
        if (tl::tl_shuffle_elect<128>()) {
          for (int gc_1 = 0; gc_1 < min(1, (((it_end[0] + 63) - it_start[0]) >> 6)); ++gc_1) {
            int seq_start_2 = it_start[0];
            int hk = it_hk[0];
            int hv_1 = it_hv[0];
            full[gc_1].expect_transaction(16384);
            #pragma unroll
            for (int i_20 = 0; i_20 < 2; ++i_20) {
              tl::tma_load(q_desc, full[gc_1], (&(((bfloat16_t*)q_s)[((gc_1 * 8192) + (i_20 * 4096))])), (i_20 * 64), ((gc_1 * 64) + seq_start_2), hk);
            }
            full[gc_1].expect_transaction(16384);
            #pragma unroll
            for (int i_21 = 0; i_21 < 2; ++i_21) {
              tl::tma_load(k_desc, full[gc_1], (&(((bfloat16_t*)k_s)[((gc_1 * 8192) + (i_21 * 4096))])), (i_21 * 64), ((gc_1 * 64) + seq_start_2), hk);
            }
            full[gc_1].expect_transaction(16384);
            #pragma unroll
            for (int i_22 = 0; i_22 < 2; ++i_22) {
              tl::tma_load(v_desc, full[gc_1], (&(((bfloat16_t*)v_s)[((gc_1 * 8192) + (i_22 * 4096))])), (i_22 * 64), ((gc_1 * 64) + seq_start_2), hv_1);
            }
          }
        }
      }
      cudaGridDependencySynchronize();
      p = ((int)blockIdx.x);
      int p_3 = p;
      int rmod_21 = (p_3 % launch_heads);
      int rdiv_18 = (p_3 / launch_heads);
      it_n[0] = ((((0 <= launch_heads) && (0 <= rmod_21)) || ((launch_heads < 0) && (rmod_21 <= 0))) ? rdiv_18 : (rdiv_18 - 1));
      int condval_13;
      if (((0 <= it_n[0]) && (it_n[0] < num_seqs_p1))) {
        condval_13 = cu_seqlens[it_n[(int64_t)0]];
      } else {
        condval_13 = 0;
      }
      it_start[0] = condval_13;
      int condval_14;
      if (((-1 <= it_n[0]) && ((it_n[0] + 1) < num_seqs_p1))) {
        condval_14 = cu_seqlens[(((int64_t)it_n[(int64_t)0]) + (int64_t)1)];
      } else {
        condval_14 = 0;
      }
      it_end[0] = condval_14;
      int rmod_22 = (p_3 % launch_heads);
      it_hv[0] = (hv_base + ((((0 <= launch_heads) && (0 <= rmod_22)) || ((launch_heads < 0) && (rmod_22 <= 0))) ? rmod_22 : (rmod_22 + launch_heads)));
      int rmod_23 = (num_v_heads % num_k_heads);
      int rdiv_19 = (num_v_heads / num_k_heads);
      int rmod_24 = (it_hv[0] % ((((0 <= num_k_heads) && (0 <= rmod_23)) || ((num_k_heads < 0) && (rmod_23 <= 0))) ? rdiv_19 : (rdiv_19 - 1)));
      int rmod_25 = (num_v_heads % num_k_heads);
      int rdiv_20 = (num_v_heads / num_k_heads);
      int rdiv_21 = (it_hv[0] / ((((0 <= num_k_heads) && (0 <= rmod_25)) || ((num_k_heads < 0) && (rmod_25 <= 0))) ? rdiv_20 : (rdiv_20 - 1)));
      int rmod_26 = (num_v_heads % num_k_heads);
      int rdiv_22 = (num_v_heads / num_k_heads);
      int rmod_27 = (num_v_heads % num_k_heads);
      int rdiv_23 = (num_v_heads / num_k_heads);
      it_hk[0] = ((((0 <= ((((0 <= num_k_heads) && (0 <= rmod_26)) || ((num_k_heads < 0) && (rmod_26 <= 0))) ? rdiv_22 : (rdiv_22 - 1))) && (0 <= rmod_24)) || ((((((0 <= num_k_heads) && (0 <= rmod_27)) || ((num_k_heads < 0) && (rmod_27 <= 0))) ? rdiv_23 : (rdiv_23 - 1)) < 0) && (rmod_24 <= 0))) ? rdiv_21 : (rdiv_21 - 1));
      int n_1 = it_n[0];
      int seq_start_3 = it_start[0];
      int n_chunks = (((it_end[0] + 63) - seq_start_3) >> 6);
      for (int gc_2 = 0; gc_2 < n_chunks; ++gc_2) {
        if (((int)threadIdx.x) < 416) {
          int hk_1 = it_hk[0];
          int hv_2 = it_hv[0];
          empty[(gc_2 % 3)].wait((((gc_2 / 3) + 1) & 1));
          if (1 <= gc_2) {
            if (tl::tl_shuffle_elect<32>()) {
              full[(gc_2 % 3)].expect_transaction(16384);
              #pragma unroll
              for (int i_23 = 0; i_23 < 2; ++i_23) {
                tl::tma_load(q_desc, full[(gc_2 % 3)], (&(((bfloat16_t*)q_s)[(((gc_2 % 3) * 8192) + (i_23 * 4096))])), (i_23 * 64), ((gc_2 * 64) + seq_start_3), hk_1);
              }
              full[(gc_2 % 3)].expect_transaction(16384);
              #pragma unroll
              for (int i_24 = 0; i_24 < 2; ++i_24) {
                tl::tma_load(k_desc, full[(gc_2 % 3)], (&(((bfloat16_t*)k_s)[(((gc_2 % 3) * 8192) + (i_24 * 4096))])), (i_24 * 64), ((gc_2 * 64) + seq_start_3), hk_1);
              }
              full[(gc_2 % 3)].expect_transaction(16384);
              #pragma unroll
              for (int i_25 = 0; i_25 < 2; ++i_25) {
                tl::tma_load(v_desc, full[(gc_2 % 3)], (&(((bfloat16_t*)v_s)[(((gc_2 % 3) * 8192) + (i_25 * 4096))])), (i_25 * 64), ((gc_2 * 64) + seq_start_3), hv_2);
              }
            }
          }
          if (tl::tl_shuffle_elect<32>()) {
            full[(gc_2 % 3)].expect_transaction(512);
            tl::tma_load(rows_desc, full[(gc_2 % 3)], (&(((float*)fac_flat)[((gc_2 % 3) * 256)])), (((gc_2 * 64) + (n_1 * 64)) + (((seq_start_3 + 3) >> 2) * 4)), 0, hv_2);
          }
          full[(gc_2 % 3)].arrive();
        } else {
          if (((int)threadIdx.x) < 480) {
            full[(gc_2 % 3)].wait(((gc_2 % 6) / 3));
            fl_row[0] = ((((gc_2 % 3) * 256) + min(64, ((it_end[0] - seq_start_3) - (gc_2 * 64)))) - 1);
            float g_last = ((float*)fac_flat)[fl_row[(int64_t)0]];
            if ((((gc_2 * 64) + seq_start_3) + ((int)threadIdx.x)) < (it_end[0] + 416)) {
              ((float*)fac_flat)[((((gc_2 % 3) * 256) + ((int)threadIdx.x)) - 288)] = exp2f(((float*)fac_flat)[((((gc_2 % 3) * 256) + ((int)threadIdx.x)) - 416)]);
              ((float*)fac_flat)[((((gc_2 % 3) * 256) + ((int)threadIdx.x)) - 224)] = (exp2f((g_last - ((float*)fac_flat)[((((gc_2 % 3) * 256) + ((int)threadIdx.x)) - 416)])) * ((float*)fac_flat)[((((gc_2 % 3) * 256) + ((int)threadIdx.x)) - 352)]);
            } else {
              ((float*)fac_flat)[((((gc_2 % 3) * 256) + ((int)threadIdx.x)) - 288)] = 0x0p+0f/*0.000000e+00*/;
              ((float*)fac_flat)[((((gc_2 % 3) * 256) + ((int)threadIdx.x)) - 224)] = 0x0p+0f/*0.000000e+00*/;
            }
            fac_ready[(gc_2 % 3)].arrive();
          }
        }
      }
    }
  }
}

#include <cutlass/cuda_host_adapter.hpp>

#ifdef _WIN32
#define TL_EXPORT __declspec(dllexport)
#else
#define TL_EXPORT
#endif

#define ERROR_BUF_SIZE 1024
static char error_buf[ERROR_BUF_SIZE];


// flashqla: cuTensorMapEncodeTiled's driver entry point, looked up once per process (thread-safe static)
using flashqla_encode_tiled_fn = decltype(&::cuTensorMapEncodeTiled);
static flashqla_encode_tiled_fn flashqla_encode_tiled_entry() {
  static const flashqla_encode_tiled_fn entry = [] {
    void* pfn = nullptr;
    cudaDriverEntryPointQueryResult status;
#if __CUDACC_VER_MAJOR__ > 12
    cudaError_t err = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &pfn, 12000, cudaEnableDefault,
                                                       &status);
#else
    cudaError_t err = cudaGetDriverEntryPoint("cuTensorMapEncodeTiled", &pfn, cudaEnableDefault, &status);
#endif
    return (err == cudaSuccess && status == cudaDriverEntryPointSuccess)
               ? reinterpret_cast<flashqla_encode_tiled_fn>(pfn) : nullptr;
  }();
  return entry;
}
template <typename... Args>
static CUresult flashqla_encode_tiled(Args... args) {
  flashqla_encode_tiled_fn entry = flashqla_encode_tiled_entry();
  return entry ? entry(args...) : CUDA_ERROR_UNKNOWN;
}

extern "C" TL_EXPORT const char* get_last_error() {
    return error_buf;
}

extern "C" TL_EXPORT int init() {
    error_buf[0] = '\0';
    
    cudaError_t result_chunk_fwd_kernel = cudaFuncSetAttribute(chunk_fwd_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 209408);
    if (result_chunk_fwd_kernel != cudaSuccess) {
        snprintf(error_buf, ERROR_BUF_SIZE, "Failed to set the allowed dynamic shared memory size to %d with error: %s", 209408, cudaGetErrorString(result_chunk_fwd_kernel));
        return -1;
    }

    return 0;
}

extern "C" TL_EXPORT int call(bfloat16_t* __restrict__ q, bfloat16_t* __restrict__ k, bfloat16_t* __restrict__ v, float* __restrict__ rows, bfloat16_t* __restrict__ a, float* __restrict__ h0, float* __restrict__ ht, int* __restrict__ cu_seqlens, bfloat16_t* __restrict__ o, float scale, int flags, int hv_base, int launch_heads, int* __restrict__ seq_table, int num_ctas, int num_tokens, int num_k_heads, int num_v_heads, int rows_len, int num_seqs_p1, cudaStream_t stream=cudaStreamDefault) {

	CUtensorMap k_desc;
	CUtensorMapDataType k_desc_type= (CUtensorMapDataType)9;
	cuuint32_t k_desc_tensorRank= 3;
	void *k_desc_globalAddress= k;
	cuuint64_t k_desc_globalDim[3]= {128,num_tokens,num_k_heads};
	cuuint64_t k_desc_globalStride[3]= {2,(int64_t)num_k_heads * 256,256};
	cuuint32_t k_desc_boxDim[3]= {64,64,1};
	cuuint32_t k_desc_elementStrides[3]= {1,1,1};
	CUtensorMapInterleave k_desc_interleave= (CUtensorMapInterleave)0;
	CUtensorMapSwizzle k_desc_swizzle= (CUtensorMapSwizzle)3;
	CUtensorMapL2promotion k_desc_l2Promotion= (CUtensorMapL2promotion)2;
	CUtensorMapFloatOOBfill k_desc_oobFill= (CUtensorMapFloatOOBfill)0;

	CUresult k_desc_result = flashqla_encode_tiled(
    &k_desc, k_desc_type, k_desc_tensorRank, k_desc_globalAddress, k_desc_globalDim, k_desc_globalStride + 1, k_desc_boxDim, k_desc_elementStrides, k_desc_interleave, k_desc_swizzle, k_desc_l2Promotion, k_desc_oobFill);

	if (k_desc_result != CUDA_SUCCESS) {
		snprintf(error_buf, ERROR_BUF_SIZE, "Error: Failed to initialize the TMA descriptor k_desc");
		return -1;
	}

	CUtensorMap o_desc;
	CUtensorMapDataType o_desc_type= (CUtensorMapDataType)9;
	cuuint32_t o_desc_tensorRank= 3;
	void *o_desc_globalAddress= o;
	cuuint64_t o_desc_globalDim[3]= {128,num_tokens,num_v_heads};
	cuuint64_t o_desc_globalStride[3]= {2,(int64_t)num_v_heads * 256,256};
	cuuint32_t o_desc_boxDim[3]= {64,64,1};
	cuuint32_t o_desc_elementStrides[3]= {1,1,1};
	CUtensorMapInterleave o_desc_interleave= (CUtensorMapInterleave)0;
	CUtensorMapSwizzle o_desc_swizzle= (CUtensorMapSwizzle)3;
	CUtensorMapL2promotion o_desc_l2Promotion= (CUtensorMapL2promotion)2;
	CUtensorMapFloatOOBfill o_desc_oobFill= (CUtensorMapFloatOOBfill)0;

	CUresult o_desc_result = flashqla_encode_tiled(
    &o_desc, o_desc_type, o_desc_tensorRank, o_desc_globalAddress, o_desc_globalDim, o_desc_globalStride + 1, o_desc_boxDim, o_desc_elementStrides, o_desc_interleave, o_desc_swizzle, o_desc_l2Promotion, o_desc_oobFill);

	if (o_desc_result != CUDA_SUCCESS) {
		snprintf(error_buf, ERROR_BUF_SIZE, "Error: Failed to initialize the TMA descriptor o_desc");
		return -1;
	}

	CUtensorMap q_desc;
	CUtensorMapDataType q_desc_type= (CUtensorMapDataType)9;
	cuuint32_t q_desc_tensorRank= 3;
	void *q_desc_globalAddress= q;
	cuuint64_t q_desc_globalDim[3]= {128,num_tokens,num_k_heads};
	cuuint64_t q_desc_globalStride[3]= {2,(int64_t)num_k_heads * 256,256};
	cuuint32_t q_desc_boxDim[3]= {64,64,1};
	cuuint32_t q_desc_elementStrides[3]= {1,1,1};
	CUtensorMapInterleave q_desc_interleave= (CUtensorMapInterleave)0;
	CUtensorMapSwizzle q_desc_swizzle= (CUtensorMapSwizzle)3;
	CUtensorMapL2promotion q_desc_l2Promotion= (CUtensorMapL2promotion)2;
	CUtensorMapFloatOOBfill q_desc_oobFill= (CUtensorMapFloatOOBfill)0;

	CUresult q_desc_result = flashqla_encode_tiled(
    &q_desc, q_desc_type, q_desc_tensorRank, q_desc_globalAddress, q_desc_globalDim, q_desc_globalStride + 1, q_desc_boxDim, q_desc_elementStrides, q_desc_interleave, q_desc_swizzle, q_desc_l2Promotion, q_desc_oobFill);

	if (q_desc_result != CUDA_SUCCESS) {
		snprintf(error_buf, ERROR_BUF_SIZE, "Error: Failed to initialize the TMA descriptor q_desc");
		return -1;
	}

	CUtensorMap rows_desc;
	CUtensorMapDataType rows_desc_type= (CUtensorMapDataType)7;
	cuuint32_t rows_desc_tensorRank= 3;
	void *rows_desc_globalAddress= rows;
	cuuint64_t rows_desc_globalDim[3]= {rows_len,2,num_v_heads};
	cuuint64_t rows_desc_globalStride[3]= {4,(int64_t)rows_len * num_v_heads * 4,(int64_t)rows_len * 4};
	cuuint32_t rows_desc_boxDim[3]= {64,2,1};
	cuuint32_t rows_desc_elementStrides[3]= {1,1,1};
	CUtensorMapInterleave rows_desc_interleave= (CUtensorMapInterleave)0;
	CUtensorMapSwizzle rows_desc_swizzle= (CUtensorMapSwizzle)0;
	CUtensorMapL2promotion rows_desc_l2Promotion= (CUtensorMapL2promotion)2;
	CUtensorMapFloatOOBfill rows_desc_oobFill= (CUtensorMapFloatOOBfill)0;

	CUresult rows_desc_result = flashqla_encode_tiled(
    &rows_desc, rows_desc_type, rows_desc_tensorRank, rows_desc_globalAddress, rows_desc_globalDim, rows_desc_globalStride + 1, rows_desc_boxDim, rows_desc_elementStrides, rows_desc_interleave, rows_desc_swizzle, rows_desc_l2Promotion, rows_desc_oobFill);

	if (rows_desc_result != CUDA_SUCCESS) {
		snprintf(error_buf, ERROR_BUF_SIZE, "Error: Failed to initialize the TMA descriptor rows_desc");
		return -1;
	}

	CUtensorMap v_desc;
	CUtensorMapDataType v_desc_type= (CUtensorMapDataType)9;
	cuuint32_t v_desc_tensorRank= 3;
	void *v_desc_globalAddress= v;
	cuuint64_t v_desc_globalDim[3]= {128,num_tokens,num_v_heads};
	cuuint64_t v_desc_globalStride[3]= {2,(int64_t)num_v_heads * 256,256};
	cuuint32_t v_desc_boxDim[3]= {64,64,1};
	cuuint32_t v_desc_elementStrides[3]= {1,1,1};
	CUtensorMapInterleave v_desc_interleave= (CUtensorMapInterleave)0;
	CUtensorMapSwizzle v_desc_swizzle= (CUtensorMapSwizzle)3;
	CUtensorMapL2promotion v_desc_l2Promotion= (CUtensorMapL2promotion)2;
	CUtensorMapFloatOOBfill v_desc_oobFill= (CUtensorMapFloatOOBfill)0;

	CUresult v_desc_result = flashqla_encode_tiled(
    &v_desc, v_desc_type, v_desc_tensorRank, v_desc_globalAddress, v_desc_globalDim, v_desc_globalStride + 1, v_desc_boxDim, v_desc_elementStrides, v_desc_interleave, v_desc_swizzle, v_desc_l2Promotion, v_desc_oobFill);

	if (v_desc_result != CUDA_SUCCESS) {
		snprintf(error_buf, ERROR_BUF_SIZE, "Error: Failed to initialize the TMA descriptor v_desc");
		return -1;
	}

	{
		cudaLaunchConfig_t config;
		cudaLaunchAttribute attribute[1];
		attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
		attribute[0].val.programmaticStreamSerializationAllowed = 1;
		config.attrs = attribute;
		config.numAttrs = 1;
		config.stream = stream;
		config.gridDim = dim3(num_ctas, 1, 1);
		config.blockDim = dim3(512, 1, 1);
		config.dynamicSmemBytes = 209408;
		cudaLaunchKernelEx(&config, chunk_fwd_kernel, cu_seqlens, h0, ht, k_desc, o, o_desc, q_desc, rows_desc, v_desc, flags, hv_base, launch_heads, num_ctas, num_k_heads, num_seqs_p1, num_tokens, num_v_heads, scale);
	}
	TILELANG_CHECK_LAST_ERROR("chunk_fwd_kernel");

	return 0;
}

static inline uint64_t flashqla_slot_u64(const unsigned char* args, int i) {
  uint64_t u;
  __builtin_memcpy(&u, args + 8 * i, 8);
  return u;
}
static inline double flashqla_slot_f64(const unsigned char* args, int i) {
  double d;
  __builtin_memcpy(&d, args + 8 * i, 8);
  return d;
}
extern "C" TL_EXPORT int call_packed(const unsigned char* args, cudaStream_t stream) {
  return call((bfloat16_t*)(uintptr_t)flashqla_slot_u64(args, 0), (bfloat16_t*)(uintptr_t)flashqla_slot_u64(args, 1), (bfloat16_t*)(uintptr_t)flashqla_slot_u64(args, 2), (float*)(uintptr_t)flashqla_slot_u64(args, 3), (bfloat16_t*)(uintptr_t)flashqla_slot_u64(args, 4), (float*)(uintptr_t)flashqla_slot_u64(args, 5), (float*)(uintptr_t)flashqla_slot_u64(args, 6), (int*)(uintptr_t)flashqla_slot_u64(args, 7), (bfloat16_t*)(uintptr_t)flashqla_slot_u64(args, 8), (float)flashqla_slot_f64(args, 9), (int)(int64_t)flashqla_slot_u64(args, 10), (int)(int64_t)flashqla_slot_u64(args, 11), (int)(int64_t)flashqla_slot_u64(args, 12), (int*)(uintptr_t)flashqla_slot_u64(args, 13), (int)(int64_t)flashqla_slot_u64(args, 14), (int)(int64_t)flashqla_slot_u64(args, 15), (int)(int64_t)flashqla_slot_u64(args, 16), (int)(int64_t)flashqla_slot_u64(args, 17), (int)(int64_t)flashqla_slot_u64(args, 18), (int)(int64_t)flashqla_slot_u64(args, 19), stream);
}
