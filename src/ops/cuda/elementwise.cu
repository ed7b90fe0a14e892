#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/elementwise.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/packed_access.cuh"

namespace db::cuda {
namespace {
using detail::from_float;
using detail::grid_for;
using detail::load_pack;
using detail::pack_width;
using detail::packs_aligned;
using detail::store_pack;
using detail::to_float;

constexpr int kThreads = 256;

// Packs of W values (packed_access.cuh), then the n % W values after the last pack.
template <int W, class TD, class TS>
__global__ void convert_kernel(TD* dst, const TS* src, int64_t n) {
  const int64_t packs = n / W;
  DB_GRID_STRIDE_LOOP(p, packs) {
    float v[W];
    load_pack<W>(src + p * W, v);
    store_pack<W>(dst + p * W, v);
  }
  DB_GRID_STRIDE_LOOP_FROM(i, packs * W, n) {
    dst[i] = from_float<TD>(to_float(src[i]));
  }
}

template <int W, class TD, class TS>
void convert_launch(TD* dst, const TS* src, int64_t count, cudaStream_t stream) {
  convert_kernel<W>
      <<<grid_for((count + W - 1) / W, kThreads), kThreads, 0, stream>>>(dst, src, count);
  CUDA_CHECK_LAUNCH();
}

template <class TA, class TX>
__global__ void add_kernel(TA* acc, const TX* x, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    acc[i] = from_float<TA>(to_float(acc[i]) + to_float(x[i]));
}

template <class T>
__global__ void scale_kernel(T* x, float s, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] = from_float<T>(to_float(x[i]) * s);
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
__global__ void axpby_kernel(T* y, float a, const T* x, float b, int64_t n) {
  const int64_t packs = n / W;
  DB_GRID_STRIDE_LOOP(p, packs) {
    float xv[W], yv[W] = {};
    load_pack<W>(x + p * W, xv);
    if (b != 0.f) load_pack<W>(y + p * W, yv);
#pragma unroll
    for (int e = 0; e < W; ++e) yv[e] = axpby_value(a, xv[e], b, yv[e]);
    store_pack<W>(y + p * W, yv);
  }
  DB_GRID_STRIDE_LOOP_FROM(i, packs * W, n) {
    y[i] = from_float<T>(axpby_value(a, to_float(x[i]), b, b != 0.f ? to_float(y[i]) : 0.f));
  }
}

template <int W, class T>
void axpby_launch(T* y, float a, const T* x, float b, int64_t count, cudaStream_t stream) {
  axpby_kernel<W>
      <<<grid_for((count + W - 1) / W, kThreads), kThreads, 0, stream>>>(y, a, x, b, count);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void axpby_packed_where_aligned(T* y, float a, const T* x, float b, int64_t count,
                                cudaStream_t stream) {
  if (count <= 0) return;
  constexpr int W = pack_width<T>();
  if (packs_aligned<W>(y, x))
    axpby_launch<W>(y, a, x, b, count, stream);
  else
    axpby_launch<1>(y, a, x, b, count, stream);
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
  if (packs_aligned<W>(dst, src))
    convert_launch<W>(dst, src, count, stream);
  else
    convert_launch<1>(dst, src, count, stream);
}

template <class TD, class TS>
void convert_scalar(TD* dst, const TS* src, int64_t count, cudaStream_t stream) {
  if (count > 0) convert_launch<1>(dst, src, count, stream);
}

template <class TA, class TX>
void add_into(TA* acc, const TX* x, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  add_kernel<<<grid_for(count, kThreads), kThreads, 0, stream>>>(acc, x, count);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void scale_into(T* x, float s, int64_t count, cudaStream_t stream) {
  if (count <= 0 || s == 1.f) return;
  scale_kernel<<<grid_for(count, kThreads), kThreads, 0, stream>>>(x, s, count);
  CUDA_CHECK_LAUNCH();
}

void axpby(float* y, float a, const float* x, float b, int64_t count, cudaStream_t stream) {
  axpby_packed_where_aligned(y, a, x, b, count, stream);
}
void axpby(bf16* y, float a, const bf16* x, float b, int64_t count, cudaStream_t stream) {
  axpby_packed_where_aligned(y, a, x, b, count, stream);
}
void axpby_scalar(float* y, float a, const float* x, float b, int64_t count, cudaStream_t stream) {
  if (count > 0) axpby_launch<1>(y, a, x, b, count, stream);
}
void axpby_scalar(bf16* y, float a, const bf16* x, float b, int64_t count, cudaStream_t stream) {
  if (count > 0) axpby_launch<1>(y, a, x, b, count, stream);
}

void fill_truncated_normal(float* x, int64_t count, float std, uint64_t seed, cudaStream_t stream) {
  if (count <= 0) return;
  truncated_normal_kernel<<<grid_for(count, kThreads), kThreads, 0, stream>>>(x, count, std, seed);
  CUDA_CHECK_LAUNCH();
}

void fill_constant(float* x, int64_t count, float value, cudaStream_t stream) {
  if (count <= 0) return;
  constant_kernel<<<grid_for(count, kThreads), kThreads, 0, stream>>>(x, count, value);
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
template void add_into<float, float>(float*, const float*, int64_t, cudaStream_t);
template void add_into<float, bf16>(float*, const bf16*, int64_t, cudaStream_t);
template void add_into<bf16, bf16>(bf16*, const bf16*, int64_t, cudaStream_t);
template void scale_into<float>(float*, float, int64_t, cudaStream_t);
template void scale_into<bf16>(bf16*, float, int64_t, cudaStream_t);

}  // namespace db::cuda
