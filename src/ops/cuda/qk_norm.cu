#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/qk_norm.hpp"
#include "ops/cuda/rmsnorm.hpp"
#include "ops/cuda/rope_rotation.cuh"

namespace db::cuda {
namespace {
using detail::from_float;
using detail::rope_first;
using detail::rope_second;
using detail::to_float;
using detail::warp_sum;

constexpr int kWarps = 8;  // rows in flight per block
constexpr int kThreads = 32 * kWarps;
constexpr int kSlots = kQkNormMaxWidth / 32;  // values per lane
constexpr int kRowsPerBlock = detail::kNormBackwardRowsPerBlock;
// rmsnorm.cu's kernels run 256 threads: its block_sum has 8 warp sums, as row_sum has 8 slots.
static_assert(kSlots == 8, "row_sum reproduces the sums of a 256-thread block");

// The RoPE of the rows (token·heads + head): null tables for none. sign −1 rotates back.
struct RowRope {
  const float* cos = nullptr;
  const float* sin = nullptr;
  int seq_len = 0, heads = 0;
  float sign = 1.f;
};

// Σ of a row's per-value terms (term[s] of lane l is value j = 32·s + l, 0 past the row),
// added as rmsnorm.cu's block_sum adds them with one value per thread: each slot by warp_sum
// (that block's warp s), then the eight slot sums by a warp_sum with zeros past lane 7 (its
// second level). Every lane gets the sum.
__device__ __forceinline__ float row_sum(const float (&term)[kSlots], int d) {
  const int lane = threadIdx.x & 31;
  float slot_sum_of_lane = 0.f;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const float slot_sum = s * 32 < d ? warp_sum(term[s]) : 0.f;  // d is the warp's
    if (lane == s) slot_sum_of_lane = slot_sum;
  }
  return warp_sum(slot_sum_of_lane);
}

// Value j of the rotated row whose values `row` (a warp's shared row) holds, at position t.
__device__ __forceinline__ float rotated(const float* row, int j, int d, int t,
                                         const RowRope& rope) {
  const int half = d / 2;
  const int i = j < half ? j : j - half;
  const float x1 = row[i], x2 = row[i + half];
  const float c = rope.cos[int64_t(t) * half + i], s = rope.sin[int64_t(t) * half + i];
  return j < half ? rope_first(x1, x2, c, s, rope.sign) : rope_second(x1, x2, c, s, rope.sign);
}

// One warp per row, kWarps rows per block. y = norm(x) rounded; with kRope the rounded norm goes
// to y_unrotated (optional) and, rotated, to y. The arithmetic is norm_forward_kernel's.
template <bool kRope>
__global__ void __launch_bounds__(kThreads)
    qk_norm_forward_kernel(bf16* __restrict__ y, bf16* __restrict__ y_unrotated,
                           float* __restrict__ rstd, const bf16* __restrict__ x,
                           const float* __restrict__ g, int64_t rows, int d, float eps,
                           RowRope rope) {
  __shared__ float normed[kWarps][kQkNormMaxWidth];  // kRope: the rows the partner lanes read
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t row = int64_t(blockIdx.x) * kWarps + warp;
  if (row >= rows) return;  // the whole warp; no block-wide barrier follows
  const bf16* xr = x + row * d;
  float xv[kSlots], sq[kSlots];
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int j = s * 32 + lane;
    xv[s] = j < d ? to_float(xr[j]) : 0.f;
    sq[s] = 0.f;
    if (j < d) sq[s] += xv[s] * xv[s];
  }
  const float r = rsqrtf(row_sum(sq, d) / d + eps);
  if (lane == 0) rstd[row] = r;
  bf16* yr = y + row * d;
#pragma unroll
  for (int s = 0; s < kSlots; ++s) {
    const int j = s * 32 + lane;
    if (j >= d) continue;
    const bf16 out = from_float<bf16>((g ? g[j] : 1.f) * xv[s] * r);
    if constexpr (kRope) {
      normed[warp][j] = to_float(out);
      if (y_unrotated) y_unrotated[row * d + j] = out;
    } else {
      yr[j] = out;
    }
  }
  if constexpr (kRope) {
    __syncwarp();
    const int t = int((row / rope.heads) % rope.seq_len);
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      const int j = s * 32 + lane;
      if (j < d) yr[j] = from_float<bf16>(rotated(normed[warp], j, d, t, rope));
    }
  }
}

// Rows [blockIdx.x·kRowsPerBlock, +kRowsPerBlock), a warp per row, kWarps at a time. The
// arithmetic is norm_backward_kernel's; with kRope dy is first rotated back and rounded (and
// dy_extra added and rounded). The gain gradient's terms of the block's rows wait in shared
// memory and are added per column in row order into the block's partial row: the order of
// norm_backward_kernel's dg_local.
template <bool kRope>
__global__ void __launch_bounds__(kThreads)
    qk_norm_backward_kernel(bf16* __restrict__ dx, float* __restrict__ dg_partial,
                            const bf16* __restrict__ dy, const bf16* __restrict__ dy_extra,
                            const bf16* __restrict__ x, const float* __restrict__ g,
                            const float* __restrict__ rstd, int64_t rows, int d, bool accumulate_dx,
                            RowRope rope) {
  DB_DYNAMIC_SHARED(float, dg_terms);  // dg_partial: dy [kRowsPerBlock][d], then x̂ likewise
  __shared__ float exchange[kWarps][kQkNormMaxWidth];  // kRope: dy of the row being rotated
  float* const dy_terms = dg_terms;
  float* const xhat_terms = dg_terms + kRowsPerBlock * d;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t begin = int64_t(blockIdx.x) * kRowsPerBlock;
  const int block_rows = int(min(rows - begin, int64_t(kRowsPerBlock)));
  for (int local = warp; local < block_rows; local += kWarps) {
    const int64_t row = begin + local;
    float dyv[kSlots];
    if constexpr (kRope) {
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        const int j = s * 32 + lane;
        if (j < d) exchange[warp][j] = to_float(dy[row * d + j]);
      }
      __syncwarp();
      const int t = int((row / rope.heads) % rope.seq_len);
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        const int j = s * 32 + lane;
        dyv[s] = 0.f;
        if (j >= d) continue;
        float v = to_float(from_float<bf16>(rotated(exchange[warp], j, d, t, rope)));
        if (dy_extra) v = to_float(from_float<bf16>(v + to_float(dy_extra[row * d + j])));
        dyv[s] = v;
      }
      __syncwarp();  // the next row overwrites exchange
    } else {
#pragma unroll
      for (int s = 0; s < kSlots; ++s) {
        const int j = s * 32 + lane;
        dyv[s] = j < d ? to_float(dy[row * d + j]) : 0.f;
      }
    }
    const float r = rstd[row];
    float xv[kSlots], term[kSlots];  // Σ ĝ·x̂
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      const int j = s * 32 + lane;
      xv[s] = j < d ? to_float(x[row * d + j]) : 0.f;
      term[s] = 0.f;
      if (j < d) {
        const float gdy = (g ? g[j] : 1.f) * dyv[s];
        const float xhat = xv[s] * r;
        term[s] += gdy * xhat;
      }
    }
    const float s2 = row_sum(term, d) / d;
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      const int j = s * 32 + lane;
      if (j >= d) continue;
      const float gdy = (g ? g[j] : 1.f) * dyv[s];
      const float xhat = xv[s] * r;
      const float v = r * (gdy - xhat * s2);
      bf16* out = dx + row * d + j;
      *out = from_float<bf16>(accumulate_dx ? to_float(*out) + v : v);
      if (dg_partial) {
        dy_terms[local * d + j] = dyv[s];
        xhat_terms[local * d + j] = xhat;
      }
    }
  }
  if (!dg_partial) return;  // the whole block
  __syncthreads();
  for (int j = threadIdx.x; j < d; j += kThreads) {
    float sum = 0.f;
    for (int local = 0; local < block_rows; ++local)
      sum += dy_terms[local * d + j] * xhat_terms[local * d + j];
    dg_partial[int64_t(blockIdx.x) * d + j] = sum;
  }
}

void require_width(int d, bool rope) {
  CUDA_REQUIRE(d > 0 && d <= kQkNormMaxWidth, "QK-norm kernels take rows of 1 to 256 values");
  CUDA_REQUIRE(!rope || d % 2 == 0, "RoPE needs an even head dim");
}

RowRope row_rope(const RopeTable& table, int seq_len, int heads, bool inverse) {
  CUDA_REQUIRE(seq_len <= table.seq_len, "RoPE table shorter than the sequence");
  return {table.cos.data(), table.sin.data(), seq_len, heads, inverse ? -1.f : 1.f};
}

template <bool kRope>
void forward(bf16* y, bf16* y_unrotated, float* rstd, const bf16* x, const float* g, int64_t rows,
             int d, double eps, const RowRope& rope, cudaStream_t stream) {
  require_width(d, kRope);
  if (rows <= 0) return;
  const int64_t blocks = (rows + kWarps - 1) / kWarps;
  launch(qk_norm_forward_kernel<kRope>, unsigned(blocks), kThreads, 0, stream, y, y_unrotated, rstd,
         x, g, rows, d, float(eps), rope);
  CUDA_CHECK_LAUNCH();
}

template <bool kRope>
void backward(bf16* dx, float* dg, const bf16* dy, const bf16* dy_extra, const bf16* x,
              const float* g, const float* rstd, int64_t rows, int d, bool accumulate_dx,
              const RowRope& rope, cudaStream_t stream) {
  require_width(d, kRope);
  if (rows <= 0) return;
  const int blocks = int((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  float* partial = nullptr;
  if (dg) CUDA_CHECK(malloc_async(&partial, size_t(blocks) * d * sizeof(float), stream));
  const size_t smem = dg ? 2 * size_t(kRowsPerBlock) * d * sizeof(float) : 0;
  if (smem > 32 * 1024) {  // with the 8 KiB exchange rows, more than the default 48 KiB
    // Once per kernel, for the widest row: not inside every (perhaps captured) call.
    static const bool opted_in = [] {
      CUDA_CHECK(cudaFuncSetAttribute(qk_norm_backward_kernel<kRope>,
                                      cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      2 * kRowsPerBlock * kQkNormMaxWidth * int(sizeof(float))));
      return true;
    }();
    (void)opted_in;
  }
  launch(qk_norm_backward_kernel<kRope>, blocks, kThreads, smem, stream, dx, partial, dy, dy_extra,
         x, g, rstd, rows, d, accumulate_dx, rope);
  CUDA_CHECK_LAUNCH();
  if (dg) {
    detail::add_norm_partials(dg, partial, blocks, d, stream);
    CUDA_CHECK(cudaFreeAsync(partial, stream));
  }
}
}  // namespace

void qk_norm_forward(bf16* y, float* rstd, const bf16* x, const float* g, int64_t rows, int d,
                     double eps, cudaStream_t stream) {
  forward<false>(y, nullptr, rstd, x, g, rows, d, eps, RowRope{}, stream);
}

void qk_norm_backward(bf16* dx, float* dg, const bf16* dy, const bf16* x, const float* g,
                      const float* rstd, int64_t rows, int d, bool accumulate_dx,
                      cudaStream_t stream) {
  backward<false>(dx, dg, dy, nullptr, x, g, rstd, rows, d, accumulate_dx, RowRope{}, stream);
}

void qk_norm_rope_forward(bf16* y, bf16* y_unrotated, float* rstd, const bf16* x, const float* g,
                          const RopeTable& table, int64_t batch, int seq_len, int heads, double eps,
                          cudaStream_t stream) {
  const int d = table.head_dim;
  forward<true>(y, y_unrotated, rstd, x, g, batch * seq_len * heads, d, eps,
                row_rope(table, seq_len, heads, false), stream);
}

void qk_norm_rope_backward(bf16* dx, float* dg, const bf16* dy, const bf16* dy_extra, const bf16* x,
                           const float* g, const float* rstd, const RopeTable& table, int64_t batch,
                           int seq_len, int heads, cudaStream_t stream) {
  const int d = table.head_dim;
  backward<true>(dx, dg, dy, dy_extra, x, g, rstd, batch * seq_len * heads, d, false,
                 row_rope(table, seq_len, heads, true), stream);
}

}  // namespace db::cuda
