#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/stream_kernels.hpp"
#include "ops/rows/stream_rows.hpp"

namespace db::cuda {
namespace {
using detail::grid_for;
using detail::warp_dot;

constexpr int kThreads = 256;
constexpr int kWarpsPerBlock = kThreads / 32;

__global__ void broadcast_kernel(float* __restrict__ state, const float* __restrict__ x,
                                 int64_t rows, int n, int d) {
  DB_GRID_STRIDE_LOOP(i, rows * n * d) {
    const int64_t r = i / (int64_t(n) * d);
    state[i] = x[r * d + i % d];
  }
}

__global__ void sum_kernel(float* __restrict__ out, const float* __restrict__ state, float scale,
                           int64_t rows, int n, int d) {
  DB_GRID_STRIDE_LOOP(i, rows * d) {
    const int64_t r = i / d;
    out[i] = rows::sum_streams_at(state + r * n * d, scale, n, d, int(i % d));
  }
}

__global__ void combine_kernel(float* __restrict__ x, const float* __restrict__ H,
                               const float* __restrict__ weights, int stride, int64_t rows, int n,
                               int d) {
  DB_GRID_STRIDE_LOOP(i, rows * d) {
    const int64_t r = i / d;
    x[i] =
        rows::combine_streams_at(H + r * n * d, weights + r * n * stride, stride, n, d, int(i % d));
  }
}

// One warp per (token, stream): dweights = ⟨dx[r], H[r, s]⟩.
__global__ void combine_weight_grad_kernel(float* __restrict__ dweights,
                                           const float* __restrict__ dx,
                                           const float* __restrict__ H, int stride, int64_t rows,
                                           int n, int d) {
  const int64_t item = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (item >= rows * n) return;  // whole warps leave together
  const double dot = warp_dot(dx + (item / n) * d, H + item * d, d);
  if ((threadIdx.x & 31) == 0) dweights[item * stride] = float(dot);
}

__global__ void combine_input_grad_kernel(float* __restrict__ dH, const float* __restrict__ dx,
                                          const float* __restrict__ weights, int stride,
                                          int64_t rows, int n, int d) {
  DB_GRID_STRIDE_LOOP(i, rows * n * d) {
    const int64_t token_stream = i / d;  // r·n + s
    dH[i] += weights[token_stream * stride] * dx[(token_stream / n) * d + i % d];
  }
}

__global__ void mix_kernel(float* __restrict__ out, const float* __restrict__ H,
                           const float* __restrict__ y, const float* __restrict__ post,
                           const float* __restrict__ mix, StreamMapLayout map, int64_t rows, int n,
                           int d) {
  DB_GRID_STRIDE_LOOP(idx, rows * n * d) {
    const int64_t r = idx / (int64_t(n) * d);
    const int i = int(idx / d % n), e = int(idx % d);
    out[idx] = rows::mix_streams_at(H + r * n * d, y + r * d, post + r * n, mix + r * map.row, map,
                                    n, d, i, e);
  }
}

// Per (token, value e): dy and the n input-stream gradients.
__global__ void mix_value_grads_kernel(float* __restrict__ dy, float* __restrict__ dH,
                                       const float* __restrict__ g, const float* __restrict__ post,
                                       const float* __restrict__ mix, StreamMapLayout map,
                                       int64_t rows, int n, int d) {
  DB_GRID_STRIDE_LOOP(idx, rows * d) {
    const int64_t r = idx / d;
    const int e = int(idx % d);
    const float* gr = g + r * n * d;
    dy[idx] = rows::mix_streams_branch_grad_at(gr, post + r * n, n, d, e);
    for (int j = 0; j < n; ++j)
      dH[(r * n + j) * d + e] =
          rows::mix_streams_input_grad_at(gr, mix + r * map.row, map, n, d, j, e);
  }
}

// One warp per (token, k), k < n: dpost_k = ⟨g_k, y⟩; k = n + i·n + j: dM(i, j) = ⟨g_i, H_j⟩.
__global__ void mix_coefficient_grads_kernel(float* __restrict__ dpost, float* __restrict__ dmix,
                                             const float* __restrict__ g,
                                             const float* __restrict__ H,
                                             const float* __restrict__ y, StreamMapLayout map,
                                             int64_t rows, int n, int d) {
  const int per_token = n + n * n;
  const int64_t item = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (item >= rows * per_token) return;
  const int64_t r = item / per_token;
  const int k = int(item % per_token);
  const float* gr = g + r * n * d;
  const bool is_post = k < n;
  const int i = is_post ? k : (k - n) / n, j = is_post ? 0 : (k - n) % n;
  const double dot = warp_dot(gr + i * d, is_post ? y + r * d : H + (r * n + j) * d, d);
  if ((threadIdx.x & 31) != 0) return;
  if (is_post)
    dpost[r * n + i] = float(dot);
  else
    dmix[r * map.row + i * map.out + j * map.in + map.offset] = float(dot);
}

unsigned warp_blocks(int64_t warps) {
  return unsigned((warps + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

}  // namespace

void broadcast_streams(float* state, const float* x, int64_t rows, int n, int d,
                       cudaStream_t stream) {
  if (rows * n * d == 0) return;
  broadcast_kernel<<<grid_for(rows * n * d, kThreads), kThreads, 0, stream>>>(state, x, rows, n, d);
  CUDA_CHECK_LAUNCH();
}

void sum_streams(float* out, const float* state, float scale, int64_t rows, int n, int d,
                 cudaStream_t stream) {
  if (rows * d == 0) return;
  sum_kernel<<<grid_for(rows * d, kThreads), kThreads, 0, stream>>>(out, state, scale, rows, n, d);
  CUDA_CHECK_LAUNCH();
}

void combine_streams(float* x, const float* H, const float* weights, int stride, int64_t rows,
                     int n, int d, cudaStream_t stream) {
  if (rows * d == 0) return;
  combine_kernel<<<grid_for(rows * d, kThreads), kThreads, 0, stream>>>(x, H, weights, stride, rows,
                                                                        n, d);
  CUDA_CHECK_LAUNCH();
}

void combine_streams_backward(float* dweights, float* dH, const float* dx, const float* H,
                              const float* weights, int stride, int64_t rows, int n, int d,
                              cudaStream_t stream) {
  if (rows * n == 0) return;
  // The dots first: they read H before dH (which may be the same state buffer) is updated.
  combine_weight_grad_kernel<<<warp_blocks(rows * n), kThreads, 0, stream>>>(dweights, dx, H,
                                                                             stride, rows, n, d);
  CUDA_CHECK_LAUNCH();
  combine_input_grad_kernel<<<grid_for(rows * n * d, kThreads), kThreads, 0, stream>>>(
      dH, dx, weights, stride, rows, n, d);
  CUDA_CHECK_LAUNCH();
}

void mix_streams(float* out, const float* H, const float* y, const float* post, const float* mix,
                 StreamMapLayout map, int64_t rows, int n, int d, cudaStream_t stream) {
  if (rows * n * d == 0) return;
  mix_kernel<<<grid_for(rows * n * d, kThreads), kThreads, 0, stream>>>(out, H, y, post, mix, map,
                                                                        rows, n, d);
  CUDA_CHECK_LAUNCH();
}

void mix_streams_backward(float* dy, float* dpost, float* dmix, float* dH, const float* g,
                          const float* H, const float* y, const float* post, const float* mix,
                          StreamMapLayout map, int64_t rows, int n, int d, cudaStream_t stream) {
  if (rows * n == 0) return;
  // The dots first (they only read), then the value gradients.
  mix_coefficient_grads_kernel<<<warp_blocks(rows * (n + n * n)), kThreads, 0, stream>>>(
      dpost, dmix, g, H, y, map, rows, n, d);
  CUDA_CHECK_LAUNCH();
  mix_value_grads_kernel<<<grid_for(rows * d, kThreads), kThreads, 0, stream>>>(
      dy, dH, g, post, mix, map, rows, n, d);
  CUDA_CHECK_LAUNCH();
}

}  // namespace db::cuda
