// The CUDA side of the generic launchers (ops/launch.hpp): kernel templates that run a design's
// DB_HD functor, instantiated in the nvcc-compiled file that launches it. Kernels run on the
// backend's current stream, as every kernel of the CUDA backend (ops/cuda/op_stream.hpp).
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/op_stream.hpp"

namespace db {
template <class T>
struct SumTargets;
}

namespace db::cuda_launch {

constexpr int kThreads = 256;

inline void check(cudaError_t code, const char* what) {
  if (code != cudaSuccess)
    throw Error(std::string("CUDA: ") + cudaGetErrorString(code) + " in " + what);
}

inline unsigned blocks_for(int64_t count) {
  int64_t blocks = (count + kThreads - 1) / kThreads;
  if (blocks > 65536 * 8) blocks = 65536 * 8;  // grid-stride beyond that
  return unsigned(blocks < 1 ? 1 : blocks);
}

template <class F>
__global__ void for_each_index_kernel(int64_t count, F f) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < count;
       i += int64_t(gridDim.x) * blockDim.x)
    f(i);
}

template <class F>
void for_each_index(int64_t count, const F& f) {
  cuda::launch(for_each_index_kernel<F>, blocks_for(count), kThreads, 0, cuda::current_stream(),
               count, f);
  check(cudaGetLastError(), "for_each_index launch");
}

// One thread per chunk of kRowsPerChunk rows: its rows in order into its own row of partials.
// Grid-stride over the chunks, since blocks_for caps the grid.
template <class F>
__global__ void chunk_sums_kernel(int64_t rows, int width, double* partials, F f) {
  for (int64_t chunk = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; chunk * kRowsPerChunk < rows;
       chunk += int64_t(gridDim.x) * blockDim.x) {
    const int64_t begin = chunk * kRowsPerChunk;
    double* sums = partials + chunk * width;
    for (int j = 0; j < width; ++j) sums[j] = 0.0;
    const int64_t end = begin + kRowsPerChunk < rows ? begin + kRowsPerChunk : rows;
    for (int64_t r = begin; r < end; ++r) f(r, sums);
  }
}

// One thread per column: the chunks in order (as the host loop), then one add into the target.
template <class T>
__global__ void add_partials_kernel(SumTargets<T> targets, const double* partials, int64_t chunks) {
  const int width = targets.width();
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= width) return;
  double sum = 0;
  for (int64_t k = 0; k < chunks; ++k) sum += partials[k * width + c];
  targets.add_to(c, sum);
}

// A warp's lanes share a row (ops/lanes.hpp).
using cuda::detail::WarpLanes;

constexpr int kWarpsPerBlock = kThreads / 32;

inline unsigned blocks_for_warps(int64_t warps) {
  return blocks_for(warps * 32);
}

// One warp per row; a warp's lanes always take the same row, so its sums see every lane.
template <class F>
__global__ void for_each_row_lanes_kernel(int64_t rows, F f) {
  const int64_t stride = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t r = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32; r < rows; r += stride)
    f(r, WarpLanes{});
}

template <class F>
void for_each_row_lanes(int64_t rows, const F& f) {
  cuda::launch(for_each_row_lanes_kernel<F>, blocks_for_warps(rows), kThreads, 0,
               cuda::current_stream(), rows, f);
  check(cudaGetLastError(), "for_each_row_lanes launch");
}

// One warp per chunk of kRowsPerWarpChunk rows, in order, into the chunk's row of partials.
// Grid-stride over the chunks (blocks_for caps the grid); a warp's lanes take the same chunks.
template <class F>
__global__ void chunk_sums_lanes_kernel(int64_t rows, int width, double* partials, F f) {
  const int64_t stride = int64_t(gridDim.x) * kWarpsPerBlock;
  for (int64_t chunk = blockIdx.x * int64_t(kWarpsPerBlock) + threadIdx.x / 32;
       chunk * kRowsPerWarpChunk < rows; chunk += stride) {
    const int64_t begin = chunk * kRowsPerWarpChunk;
    double* sums = partials + chunk * width;
    for (int j = threadIdx.x & 31; j < width; j += 32) sums[j] = 0.0;
    __syncwarp();
    const int64_t end = begin + kRowsPerWarpChunk < rows ? begin + kRowsPerWarpChunk : rows;
    for (int64_t r = begin; r < end; ++r) f(r, sums, WarpLanes{});
  }
}

// The partials of `chunks` chunks of rows, written by fill(partials, stream), added in chunk
// order into the targets; the partials are a scratch block of the stream-ordered pool.
template <class T, class Fill>
void sum_partials(const SumTargets<T>& targets, int64_t chunks, const Fill& fill) {
  const int width = targets.width();
  const cudaStream_t stream = cuda::current_stream();
  double* partials = nullptr;
  check(
      cudaMallocAsync(&partials, sizeof(double) * size_t(chunks) * (width > 0 ? width : 1), stream),
      "cudaMallocAsync (row sums)");
  fill(partials, stream);
  check(cudaGetLastError(), "row sums launch");
  if (width > 0) {
    cuda::launch(add_partials_kernel<T>, blocks_for(width), kThreads, 0, stream, targets, partials,
                 chunks);
    check(cudaGetLastError(), "row sums partials launch");
  }
  check(cudaFreeAsync(partials, stream), "cudaFreeAsync (row sums)");
}

template <class T, class F>
void for_each_row_sum_lanes(int64_t rows, const SumTargets<T>& targets, const F& f) {
  const int64_t chunks = (rows + kRowsPerWarpChunk - 1) / kRowsPerWarpChunk;
  sum_partials(targets, chunks, [&](double* partials, cudaStream_t stream) {
    cuda::launch(chunk_sums_lanes_kernel<F>, blocks_for_warps(chunks), kThreads, 0, stream, rows,
                 targets.width(), partials, f);
  });
}

template <class T, class F>
void for_each_row_sum(int64_t rows, const SumTargets<T>& targets, const F& f) {
  const int64_t chunks = chunk_count(rows);
  sum_partials(targets, chunks, [&](double* partials, cudaStream_t stream) {
    cuda::launch(chunk_sums_kernel<F>, blocks_for(chunks), kThreads, 0, stream, rows,
                 targets.width(), partials, f);
  });
}

}  // namespace db::cuda_launch
