#include "ops/cuda/attention_convert.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/kernel_util.cuh"

namespace db::cuda {
namespace {
using detail::from_float;
using detail::to_float;

constexpr int kThreads = 256;

template <class S>
__global__ void to_padded_bf16_kernel(bf16* dst, const S* src, int64_t count, int width,
                                      int padded_width) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / padded_width;
    const int col = int(i - row * padded_width);
    dst[i] = __float2bfloat16(col < width ? to_float(src[row * width + col]) : 0.f);
  }
}

template <class D>
__global__ void from_padded_bf16_kernel(D* dst, const bf16* src, int64_t count, int width,
                                        int padded_width) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / width;
    const int col = int(i - row * width);
    dst[i] = from_float<D>(__bfloat162float(src[row * padded_width + col]));
  }
}

int blocks_for(int64_t count) {
  const int64_t blocks = (count + kThreads - 1) / kThreads;
  return int(blocks < 65535 * 16 ? blocks : 65535 * 16);  // grid-stride loops cover the rest
}

template <class S>
void to_padded(bf16* dst, const S* src, int64_t rows, int width, int padded_width,
               cudaStream_t stream) {
  const int64_t count = rows * padded_width;
  if (count == 0) return;
  launch(to_padded_bf16_kernel<S>, blocks_for(count), kThreads, 0, stream, dst, src, count, width,
         padded_width);
  CUDA_CHECK_LAUNCH();
}

template <class D>
void from_padded(D* dst, const bf16* src, int64_t rows, int width, int padded_width,
                 cudaStream_t stream) {
  const int64_t count = rows * width;
  if (count == 0) return;
  launch(from_padded_bf16_kernel<D>, blocks_for(count), kThreads, 0, stream, dst, src, count, width,
         padded_width);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void to_padded_bf16(bf16* dst, const float* src, int64_t rows, int width, int padded_width,
                    cudaStream_t stream) {
  to_padded(dst, src, rows, width, padded_width, stream);
}
void to_padded_bf16(bf16* dst, const bf16* src, int64_t rows, int width, int padded_width,
                    cudaStream_t stream) {
  to_padded(dst, src, rows, width, padded_width, stream);
}
void from_padded_bf16(float* dst, const bf16* src, int64_t rows, int width, int padded_width,
                      cudaStream_t stream) {
  from_padded(dst, src, rows, width, padded_width, stream);
}
void from_padded_bf16(bf16* dst, const bf16* src, int64_t rows, int width, int padded_width,
                      cudaStream_t stream) {
  from_padded(dst, src, rows, width, padded_width, stream);
}

}  // namespace db::cuda
