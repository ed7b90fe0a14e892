// Flash-style attention, correctness-first version (doc/cuda.md "Attention"): fp32 FMA tiles in
// shared memory, 64×64 tiles, 256 threads per block.
//
// Thread layout shared by the kernels: 4 threads ("a quad", consecutive lanes) own one tile row;
// quad lane `part` owns the tile columns part, part+4, part+8, ... (interleaved, so the four
// lanes read four consecutive shared-memory words). Row statistics are combined across the quad
// with __shfl_xor_sync(·, 1) and (·, 2).
#include "ops/cuda/attention.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "ops/cuda/kernel_util.cuh"

namespace db::cuda {
namespace {
using detail::from_float;
using detail::to_float;

constexpr int kBr = 64;        // query rows per tile
constexpr int kBc = 64;        // keys per tile
constexpr int kThreads = 256;  // 4 per tile row
constexpr int kPerThread = kBc / 4;
static_assert(kBr * 4 == kThreads && kBc * 4 == kThreads);

// Row strides (floats) chosen for conflict-free shared-memory banks (see each kernel).
template <int HDP>
constexpr int kHdStride = HDP + 1;
constexpr int kRowTileStride = kBc + 4;  // [row][key] tiles read by row-owning quads
constexpr int kKeyTileStride = kBc + 8;  // [row][key] tiles written by key-owning quads

// Loads rows [row0, row0 + rows) of one head of a [B, T, heads, hd] tensor into a
// [rows][HDP + 1] fp32 tile, zero-filling rows ≥ T and columns ≥ hd (the head_dim padding).
template <class T, int HDP>
__device__ __forceinline__ void load_tile(float* tile, const T* __restrict__ src, int row0,
                                          int rows, int T_len, int heads, int hd) {
  for (int idx = threadIdx.x; idx < rows * HDP; idx += blockDim.x) {
    const int r = idx / HDP, e = idx % HDP;
    const int t = row0 + r;
    float value = 0.f;
    if (t < T_len && e < hd) value = to_float(src[(int64_t(t) * heads) * hd + e]);
    tile[r * kHdStride<HDP> + e] = value;
  }
}

// ---------------------------------------------------------------------------------------------
// Forward. Grid (ceil(T/Br), B·H). Thread row r = tid/4 (query q0 + r), columns part + 4j.
// Shared: Q [Br][HDP+1], K, V [Bc][HDP+1], P [Br][Bc+4].
// Banks: Q[r][e] — the warp's 8 rows have stride HDP+1 ≡ 1 (mod 32): distinct banks;
// K[part+4j][e] — 4 rows, distinct; P[r][part+4j] with stride Bc+4: 4r + part + 4j distinct.
template <class T, int HDP>
__global__ void __launch_bounds__(kThreads)
    attention_forward_kernel(T* __restrict__ o, float* __restrict__ lse, const T* __restrict__ q,
                             const T* __restrict__ k, const T* __restrict__ v, int T_len, int heads,
                             int kv_heads, int hd, float scale) {
  DB_DYNAMIC_SHARED(float, smem);
  float* Qs = smem;
  float* Ks = Qs + kBr * kHdStride<HDP>;
  float* Vs = Ks + kBc * kHdStride<HDP>;
  float* Ps = Vs + kBc * kHdStride<HDP>;
  constexpr int kCols = HDP / 4;  // output columns per thread

  const int bh = blockIdx.y, b = bh / heads, h = bh % heads;
  const int kvh = h / (heads / kv_heads);
  const int q0 = blockIdx.x * kBr;
  const int r = threadIdx.x >> 2, part = threadIdx.x & 3;
  const int qi = q0 + r;
  const int q_mask = min(qi, T_len - 1);  // rows past T compute finite garbage, never stored

  const T* q_head = q + (int64_t(b) * T_len * heads + h) * hd;
  const T* k_head = k + (int64_t(b) * T_len * kv_heads + kvh) * hd;
  const T* v_head = v + (int64_t(b) * T_len * kv_heads + kvh) * hd;
  load_tile<T, HDP>(Qs, q_head, q0, kBr, T_len, heads, hd);

  float acc[kCols];
#pragma unroll
  for (int c = 0; c < kCols; ++c) acc[c] = 0.f;
  float m = -INFINITY, l = 0.f;

  const int kv_end = min(q0 + kBr, T_len);  // causal: keys < the tile's last query + 1
  for (int k0 = 0; k0 < kv_end; k0 += kBc) {
    __syncthreads();  // the previous tile's K, V, P are no longer read
    load_tile<T, HDP>(Ks, k_head, k0, kBc, T_len, kv_heads, hd);
    load_tile<T, HDP>(Vs, v_head, k0, kBc, T_len, kv_heads, hd);
    __syncthreads();

    float s[kPerThread];
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) s[j] = 0.f;
    const float* q_row = Qs + r * kHdStride<HDP>;
    for (int e = 0; e < HDP; ++e) {
      const float qe = q_row[e];
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) s[j] += qe * Ks[(part + 4 * j) * kHdStride<HDP> + e];
    }
    float tile_max = -INFINITY;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int kj = k0 + part + 4 * j;
      s[j] = kj <= q_mask ? s[j] * scale : -INFINITY;
      tile_max = fmaxf(tile_max, s[j]);
    }
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1));
    tile_max = fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 2));
    // The first tile (k0 = 0) holds key 0 ≤ q_mask for every row, so m is finite from then on.
    const float m_new = fmaxf(m, tile_max);
    const float correction = expf(m - m_new);  // 0 on the first tile (m = −inf)
    float row_sum = 0.f;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const float p = expf(s[j] - m_new);  // masked: exp(−inf) = 0
      row_sum += p;
      Ps[r * kRowTileStride + part + 4 * j] = p;
    }
    row_sum += __shfl_xor_sync(0xffffffffu, row_sum, 1);
    row_sum += __shfl_xor_sync(0xffffffffu, row_sum, 2);
    l = l * correction + row_sum;
    m = m_new;
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[c] *= correction;
    __syncthreads();  // P row complete (written by the four lanes of the quad)

    const float* p_row = Ps + r * kRowTileStride;
    const int keys = min(kBc, T_len - k0);
    for (int c = 0; c < keys; ++c) {
      const float p = p_row[c];
      const float* v_row = Vs + c * kHdStride<HDP>;
#pragma unroll
      for (int cc = 0; cc < kCols; ++cc) acc[cc] += p * v_row[part + 4 * cc];
    }
  }

  if (qi < T_len) {
    const float inv = 1.f / l;
    T* o_row = o + ((int64_t(b) * T_len + qi) * heads + h) * hd;
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int e = part + 4 * c;
      if (e < hd) o_row[e] = from_float<T>(acc[c] * inv);
    }
    if (part == 0) lse[int64_t(bh) * T_len + qi] = m + logf(l);
  }
}

// D[b, h, t] = Σ_e dO·O (fp32), one warp per (row, head).
template <class T>
__global__ void attention_delta_kernel(float* __restrict__ delta, const T* __restrict__ d_o,
                                       const T* __restrict__ o, int64_t rows_heads, int T_len,
                                       int heads, int hd) {
  const int64_t warp = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp >= rows_heads) return;  // whole warps exit together
  const T* a = d_o + warp * hd;
  const T* c = o + warp * hd;
  float s = 0.f;
  for (int e = lane; e < hd; e += 32) s += to_float(a[e]) * to_float(c[e]);
  s = detail::warp_sum(s);
  if (lane == 0) {
    const int h = int(warp % heads);
    const int64_t bt = warp / heads;  // b·T + t
    const int64_t b = bt / T_len, t = bt % T_len;
    delta[(b * heads + h) * T_len + t] = s;
  }
}

// ---------------------------------------------------------------------------------------------
// dK, dV. Grid (ceil(T/Bc), B·H_kv). Thread key c = tid/4 (key k0 + c), columns part + 4j;
// each thread handles the query rows part + 4j of a query tile when building P and dS.
// Loops over the query heads of the GQA group and the query tiles at or after the key tile.
// Shared: K, V [Bc][HDP+1], Q, dO [Br][HDP+1], P, dS [Br][Bc+8], lse, D [Br].
// Banks: Q[part+4j][e] — 4 rows; K[c][e] — 8 rows with stride ≡ 1: distinct. P[part+4j][c]
// with stride Bc+8: 8·part + c (the warp's 8 keys) distinct; P[r][c] reads: 8 consecutive.
template <class T, int HDP>
__global__ void __launch_bounds__(kThreads)
    attention_dkdv_kernel(T* __restrict__ dk, T* __restrict__ dv, const T* __restrict__ d_o,
                          const float* __restrict__ lse, const float* __restrict__ delta,
                          const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                          int T_len, int heads, int kv_heads, int hd, float scale) {
  DB_DYNAMIC_SHARED(float, smem);
  float* Ks = smem;
  float* Vs = Ks + kBc * kHdStride<HDP>;
  float* Qs = Vs + kBc * kHdStride<HDP>;
  float* dOs = Qs + kBr * kHdStride<HDP>;
  float* Ps = dOs + kBr * kHdStride<HDP>;
  float* dSs = Ps + kBr * kKeyTileStride;
  float* lse_s = dSs + kBr * kKeyTileStride;
  float* delta_s = lse_s + kBr;
  constexpr int kCols = HDP / 4;

  const int bkv = blockIdx.y, b = bkv / kv_heads, kvh = bkv % kv_heads;
  const int group = heads / kv_heads;
  const int k0 = blockIdx.x * kBc;
  const int c = threadIdx.x >> 2, part = threadIdx.x & 3;
  const int kj = k0 + c;

  const T* k_head = k + (int64_t(b) * T_len * kv_heads + kvh) * hd;
  const T* v_head = v + (int64_t(b) * T_len * kv_heads + kvh) * hd;
  load_tile<T, HDP>(Ks, k_head, k0, kBc, T_len, kv_heads, hd);
  load_tile<T, HDP>(Vs, v_head, k0, kBc, T_len, kv_heads, hd);

  float dk_acc[kCols], dv_acc[kCols];
#pragma unroll
  for (int cc = 0; cc < kCols; ++cc) dk_acc[cc] = dv_acc[cc] = 0.f;

  for (int g = 0; g < group; ++g) {
    const int h = kvh * group + g;
    const T* q_head = q + (int64_t(b) * T_len * heads + h) * hd;
    const T* do_head = d_o + (int64_t(b) * T_len * heads + h) * hd;
    const float* lse_bh = lse + (int64_t(b) * heads + h) * T_len;
    const float* delta_bh = delta + (int64_t(b) * heads + h) * T_len;
    // Queries before k0 see none of these keys: start at the query tile holding k0.
    for (int q0 = (k0 / kBr) * kBr; q0 < T_len; q0 += kBr) {
      __syncthreads();  // previous Q, dO, P, dS no longer read
      load_tile<T, HDP>(Qs, q_head, q0, kBr, T_len, heads, hd);
      load_tile<T, HDP>(dOs, do_head, q0, kBr, T_len, heads, hd);
      for (int r = threadIdx.x; r < kBr; r += blockDim.x) {
        const bool in = q0 + r < T_len;
        lse_s[r] = in ? lse_bh[q0 + r] : 0.f;
        delta_s[r] = in ? delta_bh[q0 + r] : 0.f;
      }
      __syncthreads();

      float s[kPerThread], dp[kPerThread];
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) s[j] = dp[j] = 0.f;
      const float* k_row = Ks + c * kHdStride<HDP>;
      const float* v_row = Vs + c * kHdStride<HDP>;
      for (int e = 0; e < HDP; ++e) {
        const float ke = k_row[e], ve = v_row[e];
#pragma unroll
        for (int j = 0; j < kPerThread; ++j) {
          const int row = (part + 4 * j) * kHdStride<HDP> + e;
          s[j] += Qs[row] * ke;
          dp[j] += dOs[row] * ve;
        }
      }
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) {
        const int r = part + 4 * j, qi = q0 + r;
        const bool valid = qi < T_len && kj <= qi;
        const float p = valid ? expf(s[j] * scale - lse_s[r]) : 0.f;
        Ps[r * kKeyTileStride + c] = p;
        dSs[r * kKeyTileStride + c] = p * (dp[j] - delta_s[r]) * scale;
      }
      __syncthreads();  // P, dS columns complete (rows written by the four quad lanes)

      // dV[c] += Σ_r P[r][c]·dO[r] ; dK[c] += Σ_r dS[r][c]·Q[r]
      const int rows = min(kBr, T_len - q0);
      for (int r = 0; r < rows; ++r) {
        const float p = Ps[r * kKeyTileStride + c], ds = dSs[r * kKeyTileStride + c];
        const float* do_row = dOs + r * kHdStride<HDP>;
        const float* q_row = Qs + r * kHdStride<HDP>;
#pragma unroll
        for (int cc = 0; cc < kCols; ++cc) {
          dv_acc[cc] += p * do_row[part + 4 * cc];
          dk_acc[cc] += ds * q_row[part + 4 * cc];
        }
      }
    }
  }

  if (kj < T_len) {
    const int64_t offset = ((int64_t(b) * T_len + kj) * kv_heads + kvh) * hd;
#pragma unroll
    for (int cc = 0; cc < kCols; ++cc) {
      const int e = part + 4 * cc;
      if (e < hd) {
        dk[offset + e] = from_float<T>(dk_acc[cc]);
        dv[offset + e] = from_float<T>(dv_acc[cc]);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// dQ. Grid (ceil(T/Br), B·H). Thread row r = tid/4, columns part + 4j (as the forward).
// Shared: Q, dO [Br][HDP+1], K, V [Bc][HDP+1], dS [Br][Bc+4].
template <class T, int HDP>
__global__ void __launch_bounds__(kThreads)
    attention_dq_kernel(T* __restrict__ dq, const T* __restrict__ d_o,
                        const float* __restrict__ lse, const float* __restrict__ delta,
                        const T* __restrict__ q, const T* __restrict__ k, const T* __restrict__ v,
                        int T_len, int heads, int kv_heads, int hd, float scale) {
  DB_DYNAMIC_SHARED(float, smem);
  float* Qs = smem;
  float* dOs = Qs + kBr * kHdStride<HDP>;
  float* Ks = dOs + kBr * kHdStride<HDP>;
  float* Vs = Ks + kBc * kHdStride<HDP>;
  float* dSs = Vs + kBc * kHdStride<HDP>;
  constexpr int kCols = HDP / 4;

  const int bh = blockIdx.y, b = bh / heads, h = bh % heads;
  const int kvh = h / (heads / kv_heads);
  const int q0 = blockIdx.x * kBr;
  const int r = threadIdx.x >> 2, part = threadIdx.x & 3;
  const int qi = q0 + r;
  const bool row_in = qi < T_len;
  const float lse_r = row_in ? lse[int64_t(bh) * T_len + qi] : 0.f;
  const float delta_r = row_in ? delta[int64_t(bh) * T_len + qi] : 0.f;

  const T* q_head = q + (int64_t(b) * T_len * heads + h) * hd;
  const T* do_head = d_o + (int64_t(b) * T_len * heads + h) * hd;
  const T* k_head = k + (int64_t(b) * T_len * kv_heads + kvh) * hd;
  const T* v_head = v + (int64_t(b) * T_len * kv_heads + kvh) * hd;
  load_tile<T, HDP>(Qs, q_head, q0, kBr, T_len, heads, hd);
  load_tile<T, HDP>(dOs, do_head, q0, kBr, T_len, heads, hd);

  float acc[kCols];
#pragma unroll
  for (int cc = 0; cc < kCols; ++cc) acc[cc] = 0.f;

  const int kv_end = min(q0 + kBr, T_len);
  for (int k0 = 0; k0 < kv_end; k0 += kBc) {
    __syncthreads();
    load_tile<T, HDP>(Ks, k_head, k0, kBc, T_len, kv_heads, hd);
    load_tile<T, HDP>(Vs, v_head, k0, kBc, T_len, kv_heads, hd);
    __syncthreads();

    float s[kPerThread], dp[kPerThread];
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) s[j] = dp[j] = 0.f;
    const float* q_row = Qs + r * kHdStride<HDP>;
    const float* do_row = dOs + r * kHdStride<HDP>;
    for (int e = 0; e < HDP; ++e) {
      const float qe = q_row[e], de = do_row[e];
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) {
        const int key = (part + 4 * j) * kHdStride<HDP> + e;
        s[j] += qe * Ks[key];
        dp[j] += de * Vs[key];
      }
    }
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int kj = k0 + part + 4 * j;
      const bool valid = row_in && kj <= qi;
      const float p = valid ? expf(s[j] * scale - lse_r) : 0.f;
      dSs[r * kRowTileStride + part + 4 * j] = p * (dp[j] - delta_r) * scale;
    }
    __syncthreads();

    const float* ds_row = dSs + r * kRowTileStride;
    const int keys = min(kBc, T_len - k0);
    for (int c = 0; c < keys; ++c) {
      const float ds = ds_row[c];
      const float* k_row = Ks + c * kHdStride<HDP>;
#pragma unroll
      for (int cc = 0; cc < kCols; ++cc) acc[cc] += ds * k_row[part + 4 * cc];
    }
  }

  if (row_in) {
    T* dq_row = dq + ((int64_t(b) * T_len + qi) * heads + h) * hd;
#pragma unroll
    for (int cc = 0; cc < kCols; ++cc) {
      const int e = part + 4 * cc;
      if (e < hd) dq_row[e] = from_float<T>(acc[cc]);
    }
  }
}

template <class Kernel>
void allow_shared_memory(Kernel kernel, size_t bytes) {
  CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

template <class T, int HDP>
void forward_launch(T* o, float* lse, const T* q, const T* k, const T* v, const AttentionShape& s,
                    cudaStream_t stream) {
  const size_t smem = sizeof(float) * ((kBr + 2 * kBc) * kHdStride<HDP> + kBr * kRowTileStride);
  allow_shared_memory(attention_forward_kernel<T, HDP>, smem);
  const dim3 grid((s.seq_len + kBr - 1) / kBr, unsigned(s.batch * s.heads));
  launch(attention_forward_kernel<T, HDP>, grid, kThreads, smem, stream, o, lse, q, k, v, s.seq_len,
         s.heads, s.kv_heads, s.head_dim, float(1.0 / std::sqrt(double(s.head_dim))));
  CUDA_CHECK_LAUNCH();
}

template <class T, int HDP>
void backward_launch(T* dq, T* dk, T* dv, const T* d_o, const T* o, const float* lse, const T* q,
                     const T* k, const T* v, const AttentionShape& s, cudaStream_t stream) {
  const float scale = float(1.0 / std::sqrt(double(s.head_dim)));
  const int64_t rows_heads = s.batch * s.seq_len * s.heads;
  float* delta = nullptr;
  CUDA_CHECK(malloc_async(&delta, size_t(rows_heads) * sizeof(float), stream));
  launch(attention_delta_kernel<T>, unsigned((rows_heads * 32 + 255) / 256), 256, 0, stream, delta,
         d_o, o, rows_heads, s.seq_len, s.heads, s.head_dim);
  CUDA_CHECK_LAUNCH();

  const size_t smem_kv =
      sizeof(float) * (2 * (kBr + kBc) * kHdStride<HDP> + 2 * kBr * kKeyTileStride + 2 * kBr);
  allow_shared_memory(attention_dkdv_kernel<T, HDP>, smem_kv);
  const dim3 grid_kv((s.seq_len + kBc - 1) / kBc, unsigned(s.batch * s.kv_heads));
  launch(attention_dkdv_kernel<T, HDP>, grid_kv, kThreads, smem_kv, stream, dk, dv, d_o, lse, delta,
         q, k, v, s.seq_len, s.heads, s.kv_heads, s.head_dim, scale);
  CUDA_CHECK_LAUNCH();

  const size_t smem_q = sizeof(float) * (2 * (kBr + kBc) * kHdStride<HDP> + kBr * kRowTileStride);
  allow_shared_memory(attention_dq_kernel<T, HDP>, smem_q);
  const dim3 grid_q((s.seq_len + kBr - 1) / kBr, unsigned(s.batch * s.heads));
  launch(attention_dq_kernel<T, HDP>, grid_q, kThreads, smem_q, stream, dq, d_o, lse, delta, q, k,
         v, s.seq_len, s.heads, s.kv_heads, s.head_dim, scale);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFreeAsync(delta, stream));
}

void check_shape(const AttentionShape& s) {
  CUDA_REQUIRE(s.head_dim >= 1 && s.head_dim <= 128,
               "CUDA attention supports head_dim 1..128, got " + std::to_string(s.head_dim));
  CUDA_REQUIRE(s.kv_heads >= 1 && s.heads % s.kv_heads == 0,
               "attention: heads must be a multiple of kv_heads");
  CUDA_REQUIRE(s.batch * s.heads < 65536, "attention: batch·heads must be < 65536");
}
}  // namespace

template <class T>
void attention_forward(T* o, float* lse, const T* q, const T* k, const T* v,
                       const AttentionShape& s, cudaStream_t stream) {
  if (s.batch <= 0 || s.seq_len <= 0) return;
  check_shape(s);
  if (s.head_dim <= 64)
    forward_launch<T, 64>(o, lse, q, k, v, s, stream);
  else
    forward_launch<T, 128>(o, lse, q, k, v, s, stream);
}

template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* d_o, const T* o, const float* lse, const T* q,
                        const T* k, const T* v, const AttentionShape& s, cudaStream_t stream) {
  if (s.batch <= 0 || s.seq_len <= 0) return;
  check_shape(s);
  if (s.head_dim <= 64)
    backward_launch<T, 64>(dq, dk, dv, d_o, o, lse, q, k, v, s, stream);
  else
    backward_launch<T, 128>(dq, dk, dv, d_o, o, lse, q, k, v, s, stream);
}

template void attention_forward<float>(float*, float*, const float*, const float*, const float*,
                                       const AttentionShape&, cudaStream_t);
template void attention_forward<bf16>(bf16*, float*, const bf16*, const bf16*, const bf16*,
                                      const AttentionShape&, cudaStream_t);
template void attention_backward<float>(float*, float*, float*, const float*, const float*,
                                        const float*, const float*, const float*, const float*,
                                        const AttentionShape&, cudaStream_t);
template void attention_backward<bf16>(bf16*, bf16*, bf16*, const bf16*, const bf16*, const float*,
                                       const bf16*, const bf16*, const bf16*, const AttentionShape&,
                                       cudaStream_t);

}  // namespace db::cuda
