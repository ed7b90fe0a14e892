// Device helpers shared by the kernels (only included from .cu files).
#pragma once
#include <cuda_bf16.h>

#include <cstdint>

#include "ops/cuda/kernel_launch.cuh"
#include "ops/cuda/types.hpp"
#include "ops/lanes.hpp"

// for (i = this thread's first index; i < count; i += all threads of the grid)
#define DB_GRID_STRIDE_LOOP(i, count)                                           \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (count); \
       i += int64_t(gridDim.x) * blockDim.x)

namespace db::cuda::detail {

__device__ __forceinline__ float to_float(float x) {
  return x;
}
__device__ __forceinline__ float to_float(bf16 x) {
  return __bfloat162float(x);
}
template <class T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) {
  return x;
}
template <>
__device__ __forceinline__ bf16 from_float<bf16>(float x) {
  return __float2bfloat16(x);  // round to nearest even
}

template <class V>  // float, or double where a reduction mirrors the CPU's double accumulators
__device__ __forceinline__ V warp_sum(V v) {
  return butterfly_sum(
      v, [](V value, int offset) { return __shfl_xor_sync(0xffffffffu, value, offset); });
}
// The lanes of a warp sharing one row (ops/lanes.hpp; HostLanes is the host's one lane).
// Host-callable so that the shared __host__ __device__ bodies compile for both sides; only the
// device side runs.
struct WarpLanes {
  static constexpr int kCount = kWarpLanes;
  __host__ __device__ int first() const {
#if defined(__CUDA_ARCH__) || defined(DEPTHBENCH_CUDA_EMULATION)
    return threadIdx.x & 31;
#else
    return 0;
#endif
  }
  __host__ __device__ int step() const {
    return kCount;
  }
  __host__ __device__ bool leader() const {
    return first() == 0;
  }
  // warp_sum's butterfly: a + b = b + a exactly, so every lane ends with the same bits.
  template <class A>
  __host__ __device__ A sum(A part) const {
#if defined(__CUDA_ARCH__) || defined(DEPTHBENCH_CUDA_EMULATION)
    return warp_sum(part);
#else
    return part;
#endif
  }
};

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// ⟨a, b⟩ over `count` values by one warp, in double; every lane gets the result.
template <class T>
__device__ __forceinline__ double warp_dot(const T* a, const T* b, int count) {
  double sum = 0;
  for (int e = threadIdx.x & 31; e < count; e += 32) sum += double(a[e]) * double(b[e]);
  return warp_sum(sum);
}

// Sum over the whole block (blockDim.x a multiple of 32, ≤ 1024); every thread gets the
// result. `scratch` holds 32 values; the function synchronises before reusing it.
template <class V>  // float or double
__device__ __forceinline__ V block_sum(V v, V* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_sum(v);
  __syncthreads();  // scratch may still be read by a previous call
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : V(0);
  return warp_sum(v);
}
__device__ __forceinline__ float block_max(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_max(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : -INFINITY;
  return warp_max(v);
}

inline unsigned grid_for(int64_t count, int threads, int64_t max_blocks = 65536 * 8) {
  int64_t blocks = (count + threads - 1) / threads;
  if (blocks > max_blocks) blocks = max_blocks;
  return unsigned(blocks < 1 ? 1 : blocks);
}

}  // namespace db::cuda::detail
