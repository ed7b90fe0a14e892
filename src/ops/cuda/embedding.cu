#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/embedding.hpp"
#include "ops/cuda/kernel_util.cuh"

namespace db::cuda {
namespace {
using detail::from_float;
using detail::to_float;

// One block per row.
template <class TX, class TE>
__global__ void embedding_forward_kernel(TX* __restrict__ x, const int32_t* __restrict__ tokens,
                                         const TE* __restrict__ E, int d) {
  const int64_t row = blockIdx.x;
  const TE* src = E + int64_t(tokens[row]) * d;
  TX* dst = x + row * d;
  for (int j = threadIdx.x; j < d; j += blockDim.x) dst[j] = from_float<TX>(to_float(src[j]));
}

template <class TX>
__global__ void embedding_backward_kernel(float* __restrict__ dE,
                                          const int32_t* __restrict__ tokens,
                                          const TX* __restrict__ dx, int d) {
  const int64_t row = blockIdx.x;
  float* dst = dE + int64_t(tokens[row]) * d;
  const TX* src = dx + row * d;
  for (int j = threadIdx.x; j < d; j += blockDim.x) atomicAdd(dst + j, to_float(src[j]));
}
}  // namespace

template <class TX, class TE>
void embedding_forward(TX* x, const int32_t* tokens, const TE* E, int64_t N, int d,
                       cudaStream_t stream) {
  if (N <= 0) return;
  embedding_forward_kernel<<<unsigned(N), 256, 0, stream>>>(x, tokens, E, d);
  CUDA_CHECK_LAUNCH();
}

template <class TX>
void embedding_backward(float* dE, const int32_t* tokens, const TX* dx, int64_t N, int d,
                        cudaStream_t stream) {
  if (N <= 0) return;
  embedding_backward_kernel<<<unsigned(N), 256, 0, stream>>>(dE, tokens, dx, d);
  CUDA_CHECK_LAUNCH();
}

template void embedding_forward<float, float>(float*, const int32_t*, const float*, int64_t, int,
                                              cudaStream_t);
template void embedding_forward<bf16, float>(bf16*, const int32_t*, const float*, int64_t, int,
                                             cudaStream_t);
template void embedding_forward<bf16, bf16>(bf16*, const int32_t*, const bf16*, int64_t, int,
                                            cudaStream_t);
template void embedding_backward<float>(float*, const int32_t*, const float*, int64_t, int,
                                        cudaStream_t);
template void embedding_backward<bf16>(float*, const int32_t*, const bf16*, int64_t, int,
                                       cudaStream_t);

}  // namespace db::cuda
