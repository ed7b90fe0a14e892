// Packed loads and stores for the element-wise kernels: a thread moves W consecutive values with
// one access of up to 16 bytes (the widest the hardware has) instead of one 2- or 4-byte access
// per value. A kernel is a template on W: W = 1 is the one-value-per-thread kernel, which runs
// where a pointer is not aligned to the pack (packs_aligned) and is the twin the packed one is
// tested against; the packed kernel does the count's last n % W values one per thread. Both
// call the same per-value function, so they give the same bits
// (tests/gpu/cuda_packed_kernels_test.cpp).
// The layout follows PyTorch's aligned_vector: a struct of W values aligned to its own size.
#pragma once
#include <cstdint>

#include "ops/cuda/kernel_util.cuh"

namespace db::cuda::detail {

// The pack width of a kernel over tensors of the types Ts: 16 bytes of the narrowest (8 bf16
// or 4 fp32 values; a kernel that converts fp32 to bf16 moves 8 values, two accesses of fp32).
template <class... Ts>
constexpr int pack_width() {
  size_t narrowest = 16;
  ((narrowest = sizeof(Ts) < narrowest ? sizeof(Ts) : narrowest), ...);
  return int(16 / narrowest);
}

template <class T, int W>
struct alignas(sizeof(T) * W) Pack {
  T value[W];
};

// True when p may be read or written in packs of W values of T (a null pointer, an unused
// operand, is aligned).
template <int W, class T>
__host__ __device__ inline bool pack_aligned(const T* p) {
  return reinterpret_cast<uintptr_t>(p) % (sizeof(T) * W) == 0;
}
template <int W, class... Ts>
__host__ __device__ inline bool packs_aligned(const Ts*... p) {
  return (pack_aligned<W>(p) && ...);
}

// v[e] = p[e] in fp32 for e < W; p aligned to the pack.
template <int W, class T>
__device__ __forceinline__ void load_pack(const T* p, float (&v)[W]) {
  const Pack<T, W> pack = *reinterpret_cast<const Pack<T, W>*>(p);
#pragma unroll
  for (int e = 0; e < W; ++e) v[e] = to_float(pack.value[e]);
}

// p[e] = v[e] rounded to T (from_float: nearest even) for e < W; p aligned to the pack.
template <int W, class T>
__device__ __forceinline__ void store_pack(T* p, const float (&v)[W]) {
  Pack<T, W> pack;
#pragma unroll
  for (int e = 0; e < W; ++e) pack.value[e] = from_float<T>(v[e]);
  *reinterpret_cast<Pack<T, W>*>(p) = pack;
}

}  // namespace db::cuda::detail

// for (i = begin + this thread's index; i < count; i += all threads of the grid): the values a
// packed kernel leaves after its last whole pack.
#define DB_GRID_STRIDE_LOOP_FROM(i, begin, count)                                         \
  for (int64_t i = (begin) + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (count); \
       i += int64_t(gridDim.x) * blockDim.x)
