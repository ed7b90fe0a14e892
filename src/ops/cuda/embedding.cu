#include <cstdint>
#include <cub/cub.cuh>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "ops/cuda/embedding.hpp"
#include "ops/cuda/kernel_util.cuh"

namespace db::cuda {
namespace {
using detail::from_float;
using detail::grid_for;
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

// Row indices 0..N−1, the values the token sort carries along.
__global__ void iota_kernel(int32_t* __restrict__ rows, int64_t N) {
  DB_GRID_STRIDE_LOOP(i, N) rows[i] = int32_t(i);
}

// One block per position of the token-sorted list (and a tile of d columns); only the first
// position of each token's run works: it adds that token's rows in row order, as the CPU loop,
// so the sum is the same whatever the launch shape and no two blocks write one table row.
template <class TX>
__global__ void embedding_backward_sorted_kernel(float* __restrict__ dE,
                                                 const int32_t* __restrict__ sorted_tokens,
                                                 const int32_t* __restrict__ sorted_rows,
                                                 const TX* __restrict__ dx, int64_t N, int d) {
  const int64_t start = blockIdx.x;
  const int32_t token = sorted_tokens[start];
  if (start > 0 && sorted_tokens[start - 1] == token) return;
  float* dst = dE + int64_t(token) * d;
  const int j = blockIdx.y * blockDim.x + threadIdx.x;
  if (j >= d) return;
  float sum = dst[j];
  for (int64_t k = start; k < N && sorted_tokens[k] == token; ++k)
    sum += to_float(dx[int64_t(sorted_rows[k]) * d + j]);
  dst[j] = sum;
}
}  // namespace

template <class TX, class TE>
void embedding_forward(TX* x, const int32_t* tokens, const TE* E, int64_t N, int d,
                       cudaStream_t stream) {
  if (N <= 0) return;
  launch(embedding_forward_kernel<TX, TE>, unsigned(N), 256, 0, stream, x, tokens, E, d);
  CUDA_CHECK_LAUNCH();
}

template <class TX>
void embedding_backward(float* dE, const int32_t* tokens, const TX* dx, int64_t N, int d,
                        cudaStream_t stream) {
  if (N <= 0 || d <= 0) return;
  CUDA_REQUIRE(N <= INT32_MAX, "embedding_backward: at most 2^31 − 1 rows");
  const int count = int(N);
  // A stable radix sort of (token, row) pairs: equal tokens keep their rows in order.
  int32_t *rows = nullptr, *sorted_tokens = nullptr, *sorted_rows = nullptr;
  CUDA_CHECK(malloc_async(&rows, sizeof(int32_t) * N, stream));
  CUDA_CHECK(malloc_async(&sorted_tokens, sizeof(int32_t) * N, stream));
  CUDA_CHECK(malloc_async(&sorted_rows, sizeof(int32_t) * N, stream));
  launch(iota_kernel, grid_for(N, 256), 256, 0, stream, rows, N);
  CUDA_CHECK_LAUNCH();
  size_t temp_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, tokens, sorted_tokens, rows,
                                             sorted_rows, count, 0, 32, stream));
  void* temp = nullptr;
  CUDA_CHECK(malloc_async(&temp, temp_bytes, stream));
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, tokens, sorted_tokens, rows,
                                             sorted_rows, count, 0, 32, stream));
  constexpr int kThreads = 128;
  const dim3 grid(unsigned(N), unsigned((d + kThreads - 1) / kThreads));
  launch(embedding_backward_sorted_kernel<TX>, grid, kThreads, 0, stream, dE, sorted_tokens,
         sorted_rows, dx, N, d);
  CUDA_CHECK_LAUNCH();
  for (void* p : {temp, static_cast<void*>(rows), static_cast<void*>(sorted_tokens),
                  static_cast<void*>(sorted_rows)})
    CUDA_CHECK(cudaFreeAsync(p, stream));
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
