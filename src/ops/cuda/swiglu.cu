#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/swiglu.hpp"

namespace db::cuda {
namespace {
using detail::from_float;
using detail::grid_for;
using detail::to_float;

template <class T>
__global__ void swiglu_forward_kernel(T* __restrict__ h, const T* __restrict__ a,
                                      const T* __restrict__ b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float av = to_float(a[i]);
    const float sigmoid = 1.f / (1.f + expf(-av));
    h[i] = from_float<T>(av * sigmoid * to_float(b[i]));
  }
}

template <class T>
__global__ void swiglu_backward_kernel(T* __restrict__ da, T* __restrict__ db,
                                       const T* __restrict__ dh, const T* __restrict__ a,
                                       const T* __restrict__ b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const float av = to_float(a[i]), bv = to_float(b[i]), g = to_float(dh[i]);
    const float sigmoid = 1.f / (1.f + expf(-av));
    // silu'(a) = σ(a)·(1 + a·(1 − σ(a)))
    da[i] = from_float<T>(g * bv * sigmoid * (1.f + av * (1.f - sigmoid)));
    db[i] = from_float<T>(g * av * sigmoid);
  }
}
}  // namespace

template <class T>
void swiglu_forward(T* h, const T* a, const T* b, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  swiglu_forward_kernel<<<grid_for(count, 256), 256, 0, stream>>>(h, a, b, count);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void swiglu_backward(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count,
                     cudaStream_t stream) {
  if (count <= 0) return;
  swiglu_backward_kernel<<<grid_for(count, 256), 256, 0, stream>>>(da, db, dh, a, b, count);
  CUDA_CHECK_LAUNCH();
}

template void swiglu_forward<float>(float*, const float*, const float*, int64_t, cudaStream_t);
template void swiglu_forward<bf16>(bf16*, const bf16*, const bf16*, int64_t, cudaStream_t);
template void swiglu_backward<float>(float*, float*, const float*, const float*, const float*,
                                     int64_t, cudaStream_t);
template void swiglu_backward<bf16>(bf16*, bf16*, const bf16*, const bf16*, const bf16*, int64_t,
                                    cudaStream_t);

}  // namespace db::cuda
