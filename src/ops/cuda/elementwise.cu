#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/elementwise.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/packed_access.cuh"

namespace db::cuda {
namespace {
using detail::for_each_pack;
using detail::from_float;
using detail::grid_for;
using detail::load_pack;
using detail::pack_head;
using detail::pack_width;
using detail::store_pack;
using detail::to_float;

constexpr int kThreads = 256;

// Each kernel below: packs of W values from `head` on (packed_access.cuh, for_each_pack), the
// head and the values after the last pack one per thread through the same formula.
template <int W, class TD, class TS>
__global__ void convert_kernel(TD* dst, const TS* src, int64_t n, int64_t head) {
  for_each_pack<W>(
      n, head,
      [&](int64_t i) {
        float v[W];
        load_pack<W>(src + i, v);
        store_pack<W>(dst + i, v);
      },
      [&](int64_t i) { dst[i] = from_float<TD>(to_float(src[i])); });
}

// The three cases of the CPU loop (ops/cpu/cpu_ops.cpp), so that b = 0 never reads y (which may
// hold garbage or NaN) and a = b = 1 rounds as a plain add. In fp32; a bf16 y is rounded once.
// y_value is only read when b ≠ 0. The one formula of the packed kernel and its one-value twin.
__device__ __forceinline__ float axpby_value(float a, float x, float b, float y_value) {
  if (b == 0.f) return a * x;
  if (a == 1.f && b == 1.f) return y_value + x;
  return b * y_value + a * x;
}

// y may be x (y = b·y + a·y: each value is read before it is written, by the same thread).
template <int W, class T>
__global__ void axpby_kernel(T* y, float a, const T* x, float b, int64_t n, int64_t head) {
  for_each_pack<W>(
      n, head,
      [&](int64_t i) {
        float xv[W], yv[W] = {};
        load_pack<W>(x + i, xv);
        if (b != 0.f) load_pack<W>(y + i, yv);
#pragma unroll
        for (int e = 0; e < W; ++e) yv[e] = axpby_value(a, xv[e], b, yv[e]);
        store_pack<W>(y + i, yv);
      },
      [&](int64_t i) {
        y[i] = from_float<T>(axpby_value(a, to_float(x[i]), b, b != 0.f ? to_float(y[i]) : 0.f));
      });
}

// The launches: W values per thread from `head` on (W = 1, head = 0: one value per thread).
template <int W, class TD, class TS>
void convert_launch(TD* dst, const TS* src, int64_t count, int64_t head, cudaStream_t stream) {
  launch(convert_kernel<W, TD, TS>, grid_for((count + W - 1) / W, kThreads), kThreads, 0, stream,
         dst, src, count, head);
  CUDA_CHECK_LAUNCH();
}

template <int W, class T>
void axpby_launch(T* y, float a, const T* x, float b, int64_t count, int64_t head,
                  cudaStream_t stream) {
  launch(axpby_kernel<W, T>, grid_for((count + W - 1) / W, kThreads), kThreads, 0, stream, y, a, x,
         b, count, head);
  CUDA_CHECK_LAUNCH();
}

// Packed from the head on where the tensors allow it (pack_head), else one value per thread.
template <class T>
void axpby_packed_where_aligned(T* y, float a, const T* x, float b, int64_t count,
                                cudaStream_t stream) {
  if (count <= 0) return;
  constexpr int W = pack_width<T>();
  const int64_t head = pack_head<W>(count, y, x);
  if (head >= 0)
    axpby_launch<W>(y, a, x, b, count, head, stream);
  else
    axpby_launch<1>(y, a, x, b, count, 0, stream);
}

__device__ uint64_t splitmix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

__global__ void truncated_normal_kernel(float* x, int64_t n, float std, uint64_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    uint64_t state = splitmix(seed ^ (uint64_t(i) * 0xd1b54a32d192ed03ull));
    float z = 0.f;
    for (int attempt = 0; attempt < 16; ++attempt) {  // rejection outside ±3σ
      state = splitmix(state);
      const float u1 = fmaxf(float(state >> 40) * 0x1.0p-24f, 1e-12f);
      const float u2 = float(state & 0xffffffu) * 0x1.0p-24f;
      z = sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
      if (fabsf(z) <= 3.f) break;
      z = 0.f;
    }
    x[i] = z * std;
  }
}

__global__ void constant_kernel(float* x, int64_t n, float value) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] = value;
}
}  // namespace

template <class TD, class TS>
void convert(TD* dst, const TS* src, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  constexpr int W = pack_width<TD, TS>();
  const int64_t head = pack_head<W>(count, dst, src);
  if (head >= 0)
    convert_launch<W>(dst, src, count, head, stream);
  else
    convert_launch<1>(dst, src, count, 0, stream);
}

template <class TD, class TS>
void convert_scalar(TD* dst, const TS* src, int64_t count, cudaStream_t stream) {
  if (count > 0) convert_launch<1>(dst, src, count, 0, stream);
}

void axpby(float* y, float a, const float* x, float b, int64_t count, cudaStream_t stream) {
  axpby_packed_where_aligned(y, a, x, b, count, stream);
}
void axpby(bf16* y, float a, const bf16* x, float b, int64_t count, cudaStream_t stream) {
  axpby_packed_where_aligned(y, a, x, b, count, stream);
}
void axpby_scalar(float* y, float a, const float* x, float b, int64_t count, cudaStream_t stream) {
  if (count > 0) axpby_launch<1>(y, a, x, b, count, 0, stream);
}
void axpby_scalar(bf16* y, float a, const bf16* x, float b, int64_t count, cudaStream_t stream) {
  if (count > 0) axpby_launch<1>(y, a, x, b, count, 0, stream);
}

void fill_truncated_normal(float* x, int64_t count, float std, uint64_t seed, cudaStream_t stream) {
  if (count <= 0) return;
  launch(truncated_normal_kernel, grid_for(count, kThreads), kThreads, 0, stream, x, count, std,
         seed);
  CUDA_CHECK_LAUNCH();
}

void fill_constant(float* x, int64_t count, float value, cudaStream_t stream) {
  if (count <= 0) return;
  launch(constant_kernel, grid_for(count, kThreads), kThreads, 0, stream, x, count, value);
  CUDA_CHECK_LAUNCH();
}

template void convert<float, float>(float*, const float*, int64_t, cudaStream_t);
template void convert<bf16, float>(bf16*, const float*, int64_t, cudaStream_t);
template void convert<float, bf16>(float*, const bf16*, int64_t, cudaStream_t);
template void convert<bf16, bf16>(bf16*, const bf16*, int64_t, cudaStream_t);
template void convert_scalar<float, float>(float*, const float*, int64_t, cudaStream_t);
template void convert_scalar<bf16, float>(bf16*, const float*, int64_t, cudaStream_t);
template void convert_scalar<float, bf16>(float*, const bf16*, int64_t, cudaStream_t);
template void convert_scalar<bf16, bf16>(bf16*, const bf16*, int64_t, cudaStream_t);

}  // namespace db::cuda
