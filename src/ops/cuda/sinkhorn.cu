#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/sinkhorn.hpp"

namespace db::cuda {
namespace {

// Step s (0-based) of the normalisation sequence: even = rows, odd = columns.
template <int n>
__device__ __forceinline__ void normalise(float (&M)[n][n], bool rows, float eps) {
#pragma unroll
  for (int a = 0; a < n; ++a) {
    float sum = 0.f;
#pragma unroll
    for (int b = 0; b < n; ++b) sum += rows ? M[a][b] : M[b][a];
    const float inv = 1.f / (sum + eps);
#pragma unroll
    for (int b = 0; b < n; ++b) (rows ? M[a][b] : M[b][a]) *= inv;
  }
}

// M after `steps` normalisation steps (0 = exp(logits − rowmax)).
template <int n>
__device__ __forceinline__ void state_after(float (&M)[n][n], const float* l, int steps,
                                            float eps) {
#pragma unroll
  for (int i = 0; i < n; ++i) {
    float row_max = l[i * n];
#pragma unroll
    for (int j = 1; j < n; ++j) row_max = fmaxf(row_max, l[i * n + j]);
#pragma unroll
    for (int j = 0; j < n; ++j) M[i][j] = expf(l[i * n + j] - row_max);
  }
  for (int s = 0; s < steps; ++s) normalise<n>(M, (s & 1) == 0, eps);
}

template <int n>
__global__ void sinkhorn_forward_kernel(float* __restrict__ out, const float* __restrict__ logits,
                                        int64_t N, int iterations, float eps) {
  const int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (t >= N) return;
  float M[n][n];
  state_after<n>(M, logits + t * n * n, 2 * iterations, eps);
#pragma unroll
  for (int i = 0; i < n; ++i)
#pragma unroll
    for (int j = 0; j < n; ++j) out[t * n * n + i * n + j] = M[i][j];
}

// Backward of y = x/(Σx + eps) along rows (or columns): dx = (dy − Σ dy⊙y)/(Σx + eps).
// The input x of step s is recomputed from the logits (O(iterations²) tiny steps per token).
template <int n>
__global__ void sinkhorn_backward_kernel(float* __restrict__ dlogits,
                                         const float* __restrict__ dout,
                                         const float* __restrict__ logits, int64_t N,
                                         int iterations, float eps) {
  const int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (t >= N) return;
  const float* l = logits + t * n * n;
  float G[n][n], X[n][n];
#pragma unroll
  for (int i = 0; i < n; ++i)
#pragma unroll
    for (int j = 0; j < n; ++j) G[i][j] = dout[t * n * n + i * n + j];
  for (int s = 2 * iterations - 1; s >= 0; --s) {
    state_after<n>(X, l, s, eps);  // input of step s
    const bool rows = (s & 1) == 0;
#pragma unroll
    for (int a = 0; a < n; ++a) {
      float sum = 0.f;
#pragma unroll
      for (int b = 0; b < n; ++b) sum += rows ? X[a][b] : X[b][a];
      const float denom = sum + eps;
      float dot = 0.f;  // Σ_b dy·y with y = x/denom
#pragma unroll
      for (int b = 0; b < n; ++b) dot += (rows ? G[a][b] * X[a][b] : G[b][a] * X[b][a]);
      dot /= denom;
#pragma unroll
      for (int b = 0; b < n; ++b) {
        float& g = rows ? G[a][b] : G[b][a];
        g = (g - dot) / denom;
      }
    }
  }
  // Through M = exp(l − rowmax): dl = dM⊙M, and the row max (a function of l) takes −Σ dM⊙M.
  state_after<n>(X, l, 0, eps);
#pragma unroll
  for (int i = 0; i < n; ++i) {
    int arg = 0;
#pragma unroll
    for (int j = 1; j < n; ++j)
      if (l[i * n + j] > l[i * n + arg]) arg = j;
    float total = 0.f;
    float d[n];
#pragma unroll
    for (int j = 0; j < n; ++j) {
      d[j] = G[i][j] * X[i][j];
      total += d[j];
    }
#pragma unroll
    for (int j = 0; j < n; ++j) dlogits[t * n * n + i * n + j] = d[j] - (j == arg ? total : 0.f);
  }
}

template <int n>
void launch(bool backward, float* out, const float* dout, const float* logits, int64_t N,
            int iterations, float eps, cudaStream_t stream) {
  const unsigned blocks = unsigned((N + 127) / 128);
  if (backward)
    sinkhorn_backward_kernel<n><<<blocks, 128, 0, stream>>>(out, dout, logits, N, iterations, eps);
  else
    sinkhorn_forward_kernel<n><<<blocks, 128, 0, stream>>>(out, logits, N, iterations, eps);
  CUDA_CHECK_LAUNCH();
}

void dispatch(bool backward, float* out, const float* dout, const float* logits, int64_t N, int n,
              int iterations, float eps, cudaStream_t stream) {
  if (N <= 0) return;
  switch (n) {
    case 1:
      return launch<1>(backward, out, dout, logits, N, iterations, eps, stream);
    case 2:
      return launch<2>(backward, out, dout, logits, N, iterations, eps, stream);
    case 3:
      return launch<3>(backward, out, dout, logits, N, iterations, eps, stream);
    case 4:
      return launch<4>(backward, out, dout, logits, N, iterations, eps, stream);
    case 6:
      return launch<6>(backward, out, dout, logits, N, iterations, eps, stream);
    case 8:
      return launch<8>(backward, out, dout, logits, N, iterations, eps, stream);
    default:
      fail(__FILE__, __LINE__, "sinkhorn: n must be 1, 2, 3, 4, 6 or 8");
  }
}
}  // namespace

void sinkhorn_forward(float* out, const float* logits, int64_t N, int n, int iterations, float eps,
                      cudaStream_t stream) {
  dispatch(false, out, nullptr, logits, N, n, iterations, eps, stream);
}

void sinkhorn_backward(float* dlogits, const float* dout, const float* logits, int64_t N, int n,
                       int iterations, float eps, cudaStream_t stream) {
  dispatch(true, dlogits, dout, logits, N, n, iterations, eps, stream);
}

}  // namespace db::cuda
