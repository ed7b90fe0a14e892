#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/norm_row.cuh"
#include "ops/cuda/rmsnorm.hpp"

namespace db::cuda {
namespace {
using detail::block_sum;
using detail::from_float;
using detail::kNormForwardThreads;
using detail::kNormScratch;
using detail::needs_shared_opt_in;
using detail::norm_row_forward;
using detail::to_float;

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = detail::kNormBackwardRowsPerBlock;  // one dg partial per block

// One block per row (norm_row.cuh). kLayerNorm = false: RMSNorm (mean fixed at 0).
template <class TX, class TY, bool kLayerNorm>
__global__ void norm_forward_kernel(TY* __restrict__ y, float* __restrict__ mean_out,
                                    float* __restrict__ rstd_out, const TX* __restrict__ x,
                                    const float* __restrict__ g, int d, float eps) {
  __shared__ float scratch[kNormScratch];
  const int64_t row = blockIdx.x;
  norm_row_forward<TX, TY, kLayerNorm>(y + row * d, kLayerNorm ? mean_out + row : nullptr,
                                       rstd_out + row, x + row * d, g, d, eps, scratch);
}

// Rows [blockIdx.x·R, +R). RMSNorm: dx = r·ĝ − r³/d·x·Σ(ĝ⊙x), ĝ = g⊙dy.
// LayerNorm: dx = r·(ĝ − mean(ĝ) − x̂·mean(ĝ⊙x̂)), x̂ = (x−μ)·r.
// Each thread owns columns j ≡ threadIdx.x (mod blockDim.x), so its dg partials in shared
// memory are private; the block's partial row goes to dg_partial[blockIdx.x·d].
template <class TX, class TY, bool kLayerNorm>
__global__ void norm_backward_kernel(TX* __restrict__ dx, float* __restrict__ dg_partial,
                                     const TY* __restrict__ dy, const TX* __restrict__ x,
                                     const float* __restrict__ g, const float* __restrict__ mean,
                                     const float* __restrict__ rstd, int64_t N, int d,
                                     bool accumulate_dx) {
  DB_DYNAMIC_SHARED(float, dg_local);  // d floats when dg_partial != null
  __shared__ float scratch[kNormScratch];
  if (dg_partial)
    for (int j = threadIdx.x; j < d; j += blockDim.x) dg_local[j] = 0.f;
  const int64_t begin = int64_t(blockIdx.x) * kRowsPerBlock;
  const int64_t end = min(N, begin + kRowsPerBlock);
  for (int64_t row = begin; row < end; ++row) {
    const TX* xr = x + row * d;
    const TY* dyr = dy + row * d;
    const float r = rstd[row];
    const float mu = kLayerNorm ? mean[row] : 0.f;
    float s1 = 0.f, s2 = 0.f;  // Σ ĝ and Σ ĝ·x̂
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
      const float gdy = (g ? g[j] : 1.f) * to_float(dyr[j]);
      const float xhat = (to_float(xr[j]) - mu) * r;
      s1 += gdy;
      s2 += gdy * xhat;
    }
    if constexpr (kLayerNorm) s1 = block_sum(s1, scratch) / d;
    s2 = block_sum(s2, scratch) / d;
    TX* dxr = dx + row * d;
    for (int j = threadIdx.x; j < d; j += blockDim.x) {
      const float dyv = to_float(dyr[j]);
      const float gdy = (g ? g[j] : 1.f) * dyv;
      const float xhat = (to_float(xr[j]) - mu) * r;
      const float v = kLayerNorm ? r * (gdy - s1 - xhat * s2) : r * (gdy - xhat * s2);
      dxr[j] = from_float<TX>(accumulate_dx ? to_float(dxr[j]) + v : v);
      if (dg_partial) dg_local[j] += dyv * xhat;
    }
  }
  if (dg_partial)
    for (int j = threadIdx.x; j < d; j += blockDim.x)
      dg_partial[int64_t(blockIdx.x) * d + j] = dg_local[j];
}

// dg[j] += Σ_b partial[b·d + j] in a fixed order. Block (32, 8): 32 columns, 8 row lanes.
__global__ void reduce_partials_kernel(float* __restrict__ dg, const float* __restrict__ partial,
                                       int blocks, int d) {
  __shared__ float sums[8][33];
  const int j = blockIdx.x * 32 + threadIdx.x;
  float s = 0.f;
  if (j < d)
    for (int b = threadIdx.y; b < blocks; b += 8) s += partial[int64_t(b) * d + j];
  sums[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && j < d) {
    float total = 0.f;
    for (int k = 0; k < 8; ++k) total += sums[k][threadIdx.x];
    dg[j] += total;
  }
}

template <class TX, class TY, bool kLayerNorm>
void norm_backward(TX* dx, float* dg, const TY* dy, const TX* x, const float* g, const float* mean,
                   const float* rstd, int64_t N, int d, bool accumulate_dx, cudaStream_t stream) {
  if (N <= 0) return;
  const int blocks = int((N + kRowsPerBlock - 1) / kRowsPerBlock);
  float* partial = nullptr;
  if (dg) CUDA_CHECK(malloc_async(&partial, size_t(blocks) * d * sizeof(float), stream));
  const size_t smem = dg ? size_t(d) * sizeof(float) : 0;
  if (needs_shared_opt_in(smem))
    CUDA_CHECK(cudaFuncSetAttribute(norm_backward_kernel<TX, TY, kLayerNorm>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  launch(norm_backward_kernel<TX, TY, kLayerNorm>, blocks, kThreads, smem, stream, dx, partial, dy,
         x, g, mean, rstd, N, d, accumulate_dx);
  CUDA_CHECK_LAUNCH();
  if (dg) {
    detail::add_norm_partials(dg, partial, blocks, d, stream);
    CUDA_CHECK(cudaFreeAsync(partial, stream));
  }
}
}  // namespace

void detail::add_norm_partials(float* dg, const float* partial, int blocks, int d,
                               cudaStream_t stream) {
  launch(reduce_partials_kernel, (d + 31) / 32, dim3(32, 8), 0, stream, dg, partial, blocks, d);
  CUDA_CHECK_LAUNCH();
}

template <class TX, class TY>
void rmsnorm_forward(TY* y, float* rstd, const TX* x, const float* g, int64_t N, int d, double eps,
                     cudaStream_t stream) {
  if (N <= 0) return;
  launch(norm_forward_kernel<TX, TY, false>, unsigned(N), kNormForwardThreads, 0, stream, y,
         nullptr, rstd, x, g, d, float(eps));
  CUDA_CHECK_LAUNCH();
}

template <class TX, class TY>
void rmsnorm_backward(TX* dx, float* dg, const TY* dy, const TX* x, const float* g,
                      const float* rstd, int64_t N, int d, bool accumulate_dx,
                      cudaStream_t stream) {
  norm_backward<TX, TY, false>(dx, dg, dy, x, g, nullptr, rstd, N, d, accumulate_dx, stream);
}

template <class TX, class TY>
void layernorm_forward(TY* y, float* mean, float* rstd, const TX* x, const float* g, int64_t N,
                       int d, double eps, cudaStream_t stream) {
  if (N <= 0) return;
  launch(norm_forward_kernel<TX, TY, true>, unsigned(N), kNormForwardThreads, 0, stream, y, mean,
         rstd, x, g, d, float(eps));
  CUDA_CHECK_LAUNCH();
}

template <class TX, class TY>
void layernorm_backward(TX* dx, float* dg, const TY* dy, const TX* x, const float* g,
                        const float* mean, const float* rstd, int64_t N, int d, bool accumulate_dx,
                        cudaStream_t stream) {
  norm_backward<TX, TY, true>(dx, dg, dy, x, g, mean, rstd, N, d, accumulate_dx, stream);
}

#define DB_INSTANTIATE(TX, TY)                                                                   \
  template void rmsnorm_forward<TX, TY>(TY*, float*, const TX*, const float*, int64_t, int,      \
                                        double, cudaStream_t);                                   \
  template void rmsnorm_backward<TX, TY>(TX*, float*, const TY*, const TX*, const float*,        \
                                         const float*, int64_t, int, bool, cudaStream_t);        \
  template void layernorm_forward<TX, TY>(TY*, float*, float*, const TX*, const float*, int64_t, \
                                          int, double, cudaStream_t);                            \
  template void layernorm_backward<TX, TY>(TX*, float*, const TY*, const TX*, const float*,      \
                                           const float*, const float*, int64_t, int, bool,       \
                                           cudaStream_t);
DB_INSTANTIATE(float, float)
DB_INSTANTIATE(bf16, bf16)
DB_INSTANTIATE(float, bf16)
#undef DB_INSTANTIATE

}  // namespace db::cuda
