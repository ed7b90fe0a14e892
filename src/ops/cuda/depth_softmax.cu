#include <vector>

#include "ops/cuda/column_sums.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/depth_softmax.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/rows/depth_softmax_rows.hpp"

namespace db::cuda {
namespace {
using detail::block_sum;

constexpr int kThreads = 256;

// One block per token. Shared: the m logits (double), then the m weights (float).
__global__ void depth_softmax_forward_kernel(float* __restrict__ h, float* __restrict__ weights,
                                             float* __restrict__ rstd,
                                             const float* const* __restrict__ sources,
                                             const float* __restrict__ query,
                                             const float* __restrict__ key_gain, int d, int m,
                                             double eps) {
  extern __shared__ double logit[];
  float* w = reinterpret_cast<float*>(logit + m);
  __shared__ double scratch[32];
  const int64_t r = blockIdx.x;
  for (int i = 0; i < m; ++i) {
    const float* v = sources[i] + r * d;
    double sum_squares = 0;
    for (int j = threadIdx.x; j < d; j += blockDim.x) sum_squares += double(v[j]) * v[j];
    const float rs = rows::depth_key_rstd<float>(block_sum(sum_squares, scratch), d, eps);
    double dot = 0;
    for (int j = threadIdx.x; j < d; j += blockDim.x)
      dot += rows::depth_logit_term(query[j], key_gain[j], v[j], rs);
    dot = block_sum(dot, scratch);
    if (threadIdx.x == 0) {
      logit[i] = dot;
      rstd[r * m + i] = rs;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const double total = rows::depth_softmax_exp_in_place(logit, m);
    for (int i = 0; i < m; ++i) weights[r * m + i] = w[i] = float(logit[i] / total);
  }
  __syncthreads();
  for (int j = threadIdx.x; j < d; j += blockDim.x) {
    float sum = 0.f;  // sources in order, as the CPU loop
    for (int i = 0; i < m; ++i) sum += w[i] * sources[i][r * d + j];
    h[r * d + j] = sum;
  }
}

// One block per chunk of kRowsPerChunk tokens, in row order. Each thread owns the columns
// j ≡ threadIdx.x (mod blockDim.x) of the chunk's partial dquery and dkey_gain (partials
// [chunk, 2d]: dquery then dkey_gain), so no two threads write one value.
// Shared: dw and dlogit (m doubles each).
__global__ void depth_softmax_backward_kernel(
    double* __restrict__ partials, float* const* __restrict__ dsources,
    const float* __restrict__ dh, const float* const* __restrict__ sources,
    const float* __restrict__ weights, const float* __restrict__ rstd,
    const float* __restrict__ query, const float* __restrict__ key_gain, int64_t rows, int d,
    int m) {
  extern __shared__ double dw[];
  double* dlogit = dw + m;
  __shared__ double scratch[32];
  double* dq = partials + blockIdx.x * int64_t(2 * d);
  double* dg = dq + d;
  for (int j = threadIdx.x; j < d; j += blockDim.x) dq[j] = dg[j] = 0.0;
  const int64_t begin = int64_t(blockIdx.x) * kRowsPerChunk;
  const int64_t end = min(rows, begin + kRowsPerChunk);
  for (int64_t r = begin; r < end; ++r) {
    const float* dhr = dh + r * d;
    for (int i = 0; i < m; ++i) {
      const float* v = sources[i] + r * d;
      double dot = 0;
      for (int j = threadIdx.x; j < d; j += blockDim.x) dot += double(dhr[j]) * v[j];
      dot = block_sum(dot, scratch);
      if (threadIdx.x == 0) dw[i] = dot;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      double mean_dw = 0;  // in source order, as the CPU
      for (int i = 0; i < m; ++i) mean_dw += double(weights[r * m + i]) * dw[i];
      rows::depth_softmax_logit_grads(dlogit, dw, weights + r * m, mean_dw, m);
    }
    __syncthreads();
    for (int i = 0; i < m; ++i) {
      const float* v = sources[i] + r * d;
      float* dv = dsources[i] + r * d;
      const double rs = rstd[r * m + i];
      const double dl = dlogit[i];
      double dot = 0;  // Σ_j dK_j g_j v_j with dK_j = dlogit·q_j
      for (int j = threadIdx.x; j < d; j += blockDim.x) {
        const double key_hat = double(v[j]) * rs;
        dq[j] += dl * key_gain[j] * key_hat;
        dg[j] += dl * query[j] * key_hat;
        dot += dl * query[j] * key_gain[j] * v[j];
      }
      const double coef = rs * rs * rs * block_sum(dot, scratch) / d;
      for (int j = threadIdx.x; j < d; j += blockDim.x)
        dv[j] += rows::depth_source_grad(weights[r * m + i], dhr[j], rs, dl, query[j], key_gain[j],
                                         coef, v[j]);
    }
    __syncthreads();  // dw and dlogit are rewritten for the next token
  }
}

// A device copy of `count` host pointers (stream-ordered; freed by the caller with
// cudaFreeAsync after the kernels that read it).
template <class P>
P* device_pointer_array(const P* host, int count, cudaStream_t stream) {
  P* device = nullptr;
  CUDA_CHECK(cudaMallocAsync(&device, sizeof(P) * count, stream));
  CUDA_CHECK(cudaMemcpyAsync(device, host, sizeof(P) * count, cudaMemcpyHostToDevice, stream));
  return device;
}

}  // namespace

void depth_softmax_forward(float* h, float* weights, float* rstd, const float* const* sources,
                           const float* query, const float* key_gain, const DepthMixShape& s,
                           cudaStream_t stream) {
  if (s.rows <= 0) return;
  CUDA_REQUIRE(s.sources >= 1, "depth_softmax_forward: at least one source");
  const float* const* device_sources = device_pointer_array(sources, s.sources, stream);
  const size_t shared = size_t(s.sources) * (sizeof(double) + sizeof(float));
  depth_softmax_forward_kernel<<<unsigned(s.rows), kThreads, shared, stream>>>(
      h, weights, rstd, device_sources, query, key_gain, s.d, s.sources, s.eps);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFreeAsync(const_cast<const float**>(device_sources), stream));
}

void depth_softmax_backward(float* const* dsources, float* dquery, float* dkey_gain,
                            const float* dh, const float* const* sources, const float* weights,
                            const float* rstd, const float* query, const float* key_gain,
                            const DepthMixShape& s, cudaStream_t stream) {
  if (s.rows <= 0) return;
  CUDA_REQUIRE(s.sources >= 1, "depth_softmax_backward: at least one source");
  const float* const* device_sources = device_pointer_array(sources, s.sources, stream);
  float* const* device_dsources = device_pointer_array(dsources, s.sources, stream);
  const int64_t chunks = chunk_count(s.rows);
  double* partials = nullptr;
  CUDA_CHECK(cudaMallocAsync(&partials, size_t(chunks) * 2 * s.d * sizeof(double), stream));
  const size_t shared = size_t(s.sources) * 2 * sizeof(double);
  depth_softmax_backward_kernel<<<unsigned(chunks), kThreads, shared, stream>>>(
      partials, device_dsources, dh, device_sources, weights, rstd, query, key_gain, s.rows, s.d,
      s.sources);
  CUDA_CHECK_LAUNCH();
  ColumnTargets targets;
  targets.add(dquery, s.d);
  targets.add(dkey_gain, s.d);
  add_chunk_partials(partials, chunks, targets, stream);
  CUDA_CHECK(cudaFreeAsync(partials, stream));
  CUDA_CHECK(cudaFreeAsync(const_cast<const float**>(device_sources), stream));
  CUDA_CHECK(cudaFreeAsync(const_cast<float**>(device_dsources), stream));
}

}  // namespace db::cuda
