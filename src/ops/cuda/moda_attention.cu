#include <cmath>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/moda_attention.hpp"

namespace db::cuda {
namespace {
using detail::warp_sum;

constexpr int kWarpsPerBlock = 4;
constexpr int kMaxHeadDim = 256;
constexpr int kPerLane = kMaxHeadDim / 32;  // head values held by one lane: e = lane + 32·k

__device__ __forceinline__ int lane_id() {
  return threadIdx.x & 31;
}

// The (token, head) a warp works on: row n = b·T + t, `head` < heads_per_token (query heads or
// kv heads), `first` the row of position 0 of the window.
struct WarpTask {
  int64_t n, first;
  int t, head;
};
// False for the warps past the end (whole warps leave together).
__device__ __forceinline__ bool warp_task(WarpTask& task, const ModaShape& s, int heads_per_token) {
  const int64_t item = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (item >= s.batch * s.seq_len * heads_per_token) return false;
  task.n = item / heads_per_token;
  task.head = int(item % heads_per_token);
  task.t = int(task.n % s.seq_len);
  task.first = task.n - task.t;
  return true;
}

// A head vector spread over the lanes of a warp.
struct LaneVector {
  float x[kPerLane];
  __device__ void load(const float* src, int hd) {
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int e = lane_id() + 32 * k;
      x[k] = e < hd ? src[e] : 0.f;
    }
  }
  __device__ void zero() {
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) x[k] = 0.f;
  }
  // ⟨this, other⟩ (every lane gets it).
  __device__ float dot(const float* other, int hd) const {
    float part = 0.f;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int e = lane_id() + 32 * k;
      if (e < hd) part += x[k] * other[e];
    }
    return warp_sum(part);
  }
  // this = this·keep + weight·other.
  __device__ void scale_add(float keep, float weight, const float* other, int hd) {
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int e = lane_id() + 32 * k;
      if (e < hd) x[k] = x[k] * keep + weight * other[e];
    }
  }
  __device__ void store(float* dst, int hd) const {
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int e = lane_id() + 32 * k;
      if (e < hd) dst[e] = x[k];
    }
  }
};

// Addresses of one shape (all offsets in floats).
struct ModaIndex {
  ModaShape s;
  __device__ int64_t query(int64_t n, int h) const {
    return (n * s.heads + h) * int64_t(s.head_dim);
  }
  __device__ int64_t key(int64_t n, int g) const {
    return (n * s.kv_heads + g) * int64_t(s.head_dim);
  }
  __device__ int64_t depth(int64_t n, int m, int g) const {
    return ((n * s.depth_stride + m) * s.kv_heads + g) * int64_t(s.head_dim);
  }
  __device__ int64_t row_stat(int64_t n, int h) const {  // lse, D: [B, H, T]
    const int64_t b = n / s.seq_len;
    return (b * s.heads + h) * s.seq_len + n % s.seq_len;
  }
};

// One warp per (token n, head h): online softmax over keys j ≤ t, then the depth entries.
__global__ void moda_forward_kernel(float* __restrict__ o, float* __restrict__ lse,
                                    const float* __restrict__ q, const float* __restrict__ k,
                                    const float* __restrict__ v, const float* __restrict__ depth_k,
                                    const float* __restrict__ depth_v, ModaIndex at, float scale) {
  const ModaShape& s = at.s;
  WarpTask task;
  if (!warp_task(task, s, s.heads)) return;
  const int64_t n = task.n, first = task.first;
  const int h = task.head, g = h / (s.heads / s.kv_heads), hd = s.head_dim, t = task.t;
  LaneVector query, acc;
  query.load(q + at.query(n, h), hd);
  acc.zero();
  float mx = -INFINITY, total = 0.f;
  const auto visit = [&](const float* key, const float* value) {
    const float score = query.dot(key, hd) * scale;
    const float new_max = fmaxf(mx, score);
    const float keep = expf(mx - new_max);  // 0 on the first entry (mx = −∞)
    const float p = expf(score - new_max);
    total = total * keep + p;
    acc.scale_add(keep, p, value, hd);
    mx = new_max;
  };
  for (int j = 0; j <= t; ++j) visit(k + at.key(first + j, g), v + at.key(first + j, g));
  for (int m = 0; m < s.depth; ++m) visit(depth_k + at.depth(n, m, g), depth_v + at.depth(n, m, g));
  const float inv = 1.f / total;  // as the CPU: probabilities times 1/Σ
#pragma unroll
  for (int c = 0; c < kPerLane; ++c) acc.x[c] *= inv;
  acc.store(o + at.query(n, h), hd);
  if (lane_id() == 0) lse[at.row_stat(n, h)] = mx + logf(total);
}

// D = ⟨dO, O⟩ per (token, head), one warp each.
__global__ void moda_row_dot_kernel(float* __restrict__ D, const float* __restrict__ d_o,
                                    const float* __restrict__ o, ModaIndex at) {
  const ModaShape& s = at.s;
  WarpTask task;
  if (!warp_task(task, s, s.heads)) return;
  const int64_t n = task.n;
  const int h = task.head;
  LaneVector grad;
  grad.load(d_o + at.query(n, h), s.head_dim);
  const float dot = grad.dot(o + at.query(n, h), s.head_dim);
  if (lane_id() == 0) D[at.row_stat(n, h)] = dot;
}

// One warp per (token n, kv head g): dq of every query head of the group, and the depth
// gradients of the token's entries for that kv head (heads in order: no atomics).
// dS = p·(dP − D)·scale; dq = Σ dS·key; d_depth_v += p·dO; d_depth_k += dS·q.
__global__ void moda_query_backward_kernel(
    float* __restrict__ dq, float* __restrict__ d_depth_k, float* __restrict__ d_depth_v,
    const float* __restrict__ d_o, const float* __restrict__ lse, const float* __restrict__ D,
    const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v,
    const float* __restrict__ depth_k, const float* __restrict__ depth_v, ModaIndex at,
    float scale) {
  const ModaShape& s = at.s;
  WarpTask task;
  if (!warp_task(task, s, s.kv_heads)) return;
  const int64_t n = task.n, first = task.first;
  const int g = task.head, hd = s.head_dim, group = s.heads / s.kv_heads, t = task.t;
  for (int head = 0; head < group; ++head) {
    const int h = g * group + head;
    LaneVector query, grad, dquery;
    query.load(q + at.query(n, h), hd);
    grad.load(d_o + at.query(n, h), hd);
    dquery.zero();
    const float row_lse = lse[at.row_stat(n, h)], row_D = D[at.row_stat(n, h)];
    for (int j = 0; j <= t; ++j) {
      const float* key = k + at.key(first + j, g);
      const float p = expf(query.dot(key, hd) * scale - row_lse);
      const float ds = scale * p * (grad.dot(v + at.key(first + j, g), hd) - row_D);
      dquery.scale_add(1.f, ds, key, hd);
    }
    for (int m = 0; m < s.depth; ++m) {
      const int64_t entry = at.depth(n, m, g);
      const float p = expf(query.dot(depth_k + entry, hd) * scale - row_lse);
      const float ds = scale * p * (grad.dot(depth_v + entry, hd) - row_D);
      dquery.scale_add(1.f, ds, depth_k + entry, hd);
#pragma unroll
      for (int c = 0; c < kPerLane; ++c) {
        const int e = lane_id() + 32 * c;
        if (e < hd) {
          d_depth_v[entry + e] += p * grad.x[c];
          d_depth_k[entry + e] += ds * query.x[c];
        }
      }
    }
    dquery.store(dq + at.query(n, h), hd);
  }
}

// One warp per (key row n_j, kv head g): dk, dv over the queries i ≥ j of every head of the
// group (overwritten).
__global__ void moda_key_backward_kernel(float* __restrict__ dk, float* __restrict__ dv,
                                         const float* __restrict__ d_o,
                                         const float* __restrict__ lse, const float* __restrict__ D,
                                         const float* __restrict__ q, const float* __restrict__ k,
                                         const float* __restrict__ v, ModaIndex at, float scale) {
  const ModaShape& s = at.s;
  WarpTask task;  // the key row
  if (!warp_task(task, s, s.kv_heads)) return;
  const int64_t nj = task.n, first = task.first;
  const int g = task.head, hd = s.head_dim, group = s.heads / s.kv_heads, j = task.t;
  LaneVector key, value, dkey, dvalue;
  key.load(k + at.key(nj, g), hd);
  value.load(v + at.key(nj, g), hd);
  dkey.zero();
  dvalue.zero();
  for (int head = 0; head < group; ++head) {
    const int h = g * group + head;
    for (int i = j; i < s.seq_len; ++i) {
      const int64_t ni = first + i;
      const float* query = q + at.query(ni, h);
      const float* grad = d_o + at.query(ni, h);
      const float p = expf(key.dot(query, hd) * scale - lse[at.row_stat(ni, h)]);
      const float ds = scale * p * (value.dot(grad, hd) - D[at.row_stat(ni, h)]);
      dvalue.scale_add(1.f, p, grad, hd);
      dkey.scale_add(1.f, ds, query, hd);
    }
  }
  dkey.store(dk + at.key(nj, g), hd);
  dvalue.store(dv + at.key(nj, g), hd);
}

unsigned warp_blocks(int64_t warps) {
  return unsigned((warps + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

void check_shape(const ModaShape& s) {
  CUDA_REQUIRE(s.head_dim >= 1 && s.head_dim <= kMaxHeadDim,
               "moda attention: head_dim must be in 1.." + std::to_string(kMaxHeadDim));
  CUDA_REQUIRE(s.kv_heads >= 1 && s.heads % s.kv_heads == 0,
               "moda attention: heads must be a multiple of kv_heads");
  CUDA_REQUIRE(s.depth >= 0 && s.depth <= s.depth_stride,
               "moda attention: depth must be in 0..depth_stride");
}

}  // namespace

void moda_attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                            const float* depth_k, const float* depth_v, const ModaShape& s,
                            cudaStream_t stream) {
  const int64_t rows = s.batch * s.seq_len;
  if (rows <= 0) return;
  check_shape(s);
  const float scale = float(1.0 / std::sqrt(double(s.head_dim)));
  launch(moda_forward_kernel, warp_blocks(rows * s.heads), 32 * kWarpsPerBlock, 0, stream, o, lse,
         q, k, v, depth_k, depth_v, ModaIndex{s}, scale);
  CUDA_CHECK_LAUNCH();
}

void moda_attention_backward(float* dq, float* dk, float* dv, float* d_depth_k, float* d_depth_v,
                             const float* d_o, const float* o, const float* lse, const float* q,
                             const float* k, const float* v, const float* depth_k,
                             const float* depth_v, const ModaShape& s, cudaStream_t stream) {
  const int64_t rows = s.batch * s.seq_len;
  if (rows <= 0) return;
  check_shape(s);
  const float scale = float(1.0 / std::sqrt(double(s.head_dim)));
  const ModaIndex at{s};
  float* D = nullptr;
  CUDA_CHECK(malloc_async(&D, size_t(rows) * s.heads * sizeof(float), stream));
  const int threads = 32 * kWarpsPerBlock;
  launch(moda_row_dot_kernel, warp_blocks(rows * s.heads), threads, 0, stream, D, d_o, o, at);
  CUDA_CHECK_LAUNCH();
  launch(moda_query_backward_kernel, warp_blocks(rows * s.kv_heads), threads, 0, stream, dq,
         d_depth_k, d_depth_v, d_o, lse, D, q, k, v, depth_k, depth_v, at, scale);
  CUDA_CHECK_LAUNCH();
  launch(moda_key_backward_kernel, warp_blocks(rows * s.kv_heads), threads, 0, stream, dk, dv, d_o,
         lse, D, q, k, v, at, scale);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFreeAsync(D, stream));
}

}  // namespace db::cuda
