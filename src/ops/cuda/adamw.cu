#include <cmath>

#include "ops/cuda/adamw.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "ops/cuda/kernel_util.cuh"

namespace db::cuda {
namespace {
constexpr int kNormBlocks = 1024;
constexpr int kThreads = 256;

__global__ void sum_squares_kernel(double* __restrict__ partial, const float* __restrict__ g,
                                   int64_t n) {
  __shared__ double s[kThreads];
  double acc = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const double x = g[i];
    acc += x * x;
  }
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (int(threadIdx.x) < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

__global__ void sum_partials_kernel(double* __restrict__ out, const double* __restrict__ partial,
                                    int blocks) {
  __shared__ double s[kThreads];
  double acc = 0;
  for (int i = threadIdx.x; i < blocks; i += blockDim.x) acc += partial[i];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (int(threadIdx.x) < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out = s[0];
}

__global__ void adamw_kernel(float* __restrict__ values, const float* __restrict__ grads,
                             float* __restrict__ m, float* __restrict__ v,
                             const uint8_t* __restrict__ decay, int64_t n, float lr, float beta1,
                             float beta2, float eps, float weight_decay, float bias1, float bias2,
                             float clip_scale, const double* __restrict__ norm_sq, double grad_clip,
                             bf16* __restrict__ values_bf16) {
  float scale = clip_scale;
  if (norm_sq) {
    const double norm = sqrt(*norm_sq);
    scale = (grad_clip > 0 && norm > grad_clip) ? float(grad_clip / norm) : 1.f;
  }
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float g = grads[i] * scale;
    const float mi = beta1 * m[i] + (1.f - beta1) * g;
    const float vi = beta2 * v[i] + (1.f - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float p = values[i];
    if (!decay || decay[i]) p -= lr * weight_decay * p;  // decoupled decay first
    p -= lr * (mi / bias1) / (sqrtf(vi / bias2) + eps);
    values[i] = p;
    if (values_bf16) values_bf16[i] = __float2bfloat16(p);
  }
}
}  // namespace

void global_norm_squared(double* norm_sq, const float* grads, int64_t count, cudaStream_t stream) {
  double* partial = nullptr;
  CUDA_CHECK(malloc_async(&partial, kNormBlocks * sizeof(double), stream));
  launch(sum_squares_kernel, kNormBlocks, kThreads, 0, stream, partial, grads, count);
  CUDA_CHECK_LAUNCH();
  launch(sum_partials_kernel, 1, kThreads, 0, stream, norm_sq, partial, kNormBlocks);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFreeAsync(partial, stream));
}

double global_norm(const float* grads, int64_t count, cudaStream_t stream) {
  double* norm_sq = nullptr;
  CUDA_CHECK(malloc_async(&norm_sq, sizeof(double), stream));
  global_norm_squared(norm_sq, grads, count, stream);
  double host = 0;
  CUDA_CHECK(cudaMemcpyAsync(&host, norm_sq, sizeof(double), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaFreeAsync(norm_sq, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return std::sqrt(host);
}

void adamw_step(float* values, const float* grads, float* m, float* v, const uint8_t* decay,
                int64_t count, const AdamWStep& s, bf16* values_bf16, cudaStream_t stream) {
  if (count <= 0) return;
  const double bias1 = 1.0 - std::pow(s.beta1, double(s.step));
  const double bias2 = 1.0 - std::pow(s.beta2, double(s.step));
  launch(adamw_kernel, detail::grid_for(count, kThreads, 132 * 16), kThreads, 0, stream, values,
         grads, m, v, decay, count, float(s.lr), float(s.beta1), float(s.beta2), float(s.eps),
         float(s.weight_decay), float(bias1), float(bias2), float(s.clip_scale), s.norm_sq,
         s.grad_clip, values_bf16);
  CUDA_CHECK_LAUNCH();
}

}  // namespace db::cuda
