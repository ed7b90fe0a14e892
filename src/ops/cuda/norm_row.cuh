// The forward of one row of RMSNorm or the bias-free LayerNorm by one thread block (spec §0,
// §4), shared by the plain norms (rmsnorm.cu) and the fused residual add + norm
// (add_rmsnorm.cu), so that the two give the same bits: thread t reads the columns t, t +
// blockDim.x, ... in order and block_sum adds the threads' parts, with kNormForwardThreads
// threads per block in both.
#pragma once
#include <cstddef>

#include "ops/cuda/kernel_util.cuh"

namespace db::cuda::detail {

constexpr int kNormForwardThreads = 256;
// The floats of block_sum's scratch that the norm kernels keep in static shared memory. They
// count against the same 48 KiB per block as a launch's dynamic bytes: a launch opts in to more
// (cudaFuncSetAttribute) when static + dynamic exceed it, not the dynamic bytes alone.
constexpr int kNormScratch = 32;
constexpr size_t kDefaultSharedBytes = 48 * 1024;
inline bool needs_shared_opt_in(size_t dynamic_bytes) {
  return dynamic_bytes + kNormScratch * sizeof(float) > kDefaultSharedBytes;
}

// yr = g ⊙ (xr − μ)·r with r = 1/sqrt(mean((xr − μ)²) + eps), μ = mean(xr) for LayerNorm, else
// 0. Thread 0 writes *rstd_out (and *mean_out). scratch: kNormScratch floats of shared memory. xr
// may be global or shared memory; every thread of the block must call.
template <class TX, class TY, bool kLayerNorm>
__device__ __forceinline__ void norm_row_forward(TY* yr, float* mean_out, float* rstd_out,
                                                 const TX* xr, const float* g, int d, float eps,
                                                 float* scratch) {
  float mu = 0.f;
  if constexpr (kLayerNorm) {
    float s = 0.f;
    for (int j = threadIdx.x; j < d; j += blockDim.x) s += to_float(xr[j]);
    mu = block_sum(s, scratch) / d;
  }
  float sq = 0.f;
  for (int j = threadIdx.x; j < d; j += blockDim.x) {
    const float v = to_float(xr[j]) - mu;
    sq += v * v;
  }
  const float r = rsqrtf(block_sum(sq, scratch) / d + eps);
  if (threadIdx.x == 0) {
    *rstd_out = r;
    if constexpr (kLayerNorm) *mean_out = mu;
  }
  for (int j = threadIdx.x; j < d; j += blockDim.x)
    yr[j] = from_float<TY>((g ? g[j] : 1.f) * (to_float(xr[j]) - mu) * r);
}

}  // namespace db::cuda::detail
