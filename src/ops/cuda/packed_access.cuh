// Packed loads and stores for the element-wise kernels: a thread moves W consecutive values with
// one access of up to 16 bytes (the widest the hardware has) instead of one 2- or 4-byte access
// per value. A kernel is a template on W: W = 1 is the one-value-per-thread kernel, the twin the
// packed one is tested against. A packed kernel walks its values with for_each_pack: the values
// before the first pack boundary (pack_head: tensors that all start the same number of values
// past a boundary, e.g. at an odd offset into a buffer) and those after the last whole pack one
// per thread, the rest in packs; tensors misaligned by different amounts run the W = 1 kernel.
// Both call the same per-value function, so they give the same bits
// (tests/gpu/cuda_packed_kernels_test.cpp).
// The layout follows PyTorch's aligned_vector: a struct of W values aligned to its own size.
#pragma once
#include <cstdint>

#include "ops/cuda/kernel_util.cuh"

// for (i = begin + this thread's index; i < count; i += all threads of the grid): the values a
// packed kernel leaves after its last whole pack.
#define DB_GRID_STRIDE_LOOP_FROM(i, begin, count)                                         \
  for (int64_t i = (begin) + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (count); \
       i += int64_t(gridDim.x) * blockDim.x)

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

// How many values p lies past the last boundary of packs of W values of T; -1 when p is not even
// aligned to one value.
template <int W, class T>
inline int pack_misalignment(const T* p) {
  const uintptr_t bytes = reinterpret_cast<uintptr_t>(p) % (sizeof(T) * W);
  return bytes % sizeof(T) == 0 ? int(bytes / sizeof(T)) : -1;
}

// The values a packed kernel over `count` values of the tensors p... does one per thread before
// its first whole pack, so that every tensor is aligned to the pack from there on: 0 when they
// all are already, W − m when they all lie m values past a boundary (at most count); −1 when
// they lie at different distances, and no head aligns them all (run the W = 1 kernel). Null
// pointers, unused operands, are left out.
template <int W, class... Ts>
inline int64_t pack_head(int64_t count, const Ts*... p) {
  int common = 0;
  bool seen = false, agree = true;
  auto see = [&](int m, bool used) {
    if (!used) return;
    agree = agree && m >= 0 && (!seen || m == common);
    common = m;
    seen = true;
  };
  (see(pack_misalignment<W>(p), p != nullptr), ...);
  if (!agree) return -1;
  const int64_t head = common == 0 ? 0 : W - common;
  return head < count ? head : count;
}

// The loop of a packed kernel over n values, head of them (pack_head) before the first pack:
// value(i) for each i < head, pack(i) at the first index i of each whole pack after them, value(i)
// for each of the at most W − 1 values after the last pack. Grid-stride, as DB_GRID_STRIDE_LOOP.
template <int W, class PackFn, class ValueFn>
__device__ __forceinline__ void for_each_pack(int64_t n, int64_t head, PackFn pack, ValueFn value) {
  const int64_t packs = (n - head) / W;
  DB_GRID_STRIDE_LOOP(i, head) value(i);
  DB_GRID_STRIDE_LOOP(p, packs) pack(head + p * W);
  DB_GRID_STRIDE_LOOP_FROM(i, head + packs * W, n) value(i);
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
