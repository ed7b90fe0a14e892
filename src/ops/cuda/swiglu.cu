#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/packed_access.cuh"
#include "ops/cuda/swiglu.hpp"

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

// The per-value formulas, in fp32, of the packed kernels and of their one-value twins.
__device__ __forceinline__ float swiglu_value(float a, float b) {
  const float sigmoid = 1.f / (1.f + expf(-a));
  return a * sigmoid * b;
}
__device__ __forceinline__ void swiglu_gradients(float g, float a, float b, float& da, float& db) {
  const float sigmoid = 1.f / (1.f + expf(-a));
  // silu'(a) = σ(a)·(1 + a·(1 − σ(a)))
  da = g * b * sigmoid * (1.f + a * (1.f - sigmoid));
  db = g * a * sigmoid;
}

// Packs of W values (packed_access.cuh), then the n % W values after the last pack.
template <int W, class T>
__global__ void swiglu_forward_kernel(T* __restrict__ h, const T* __restrict__ a,
                                      const T* __restrict__ b, int64_t n) {
  const int64_t packs = n / W;
  DB_GRID_STRIDE_LOOP(p, packs) {
    float av[W], bv[W], hv[W];
    load_pack<W>(a + p * W, av);
    load_pack<W>(b + p * W, bv);
#pragma unroll
    for (int e = 0; e < W; ++e) hv[e] = swiglu_value(av[e], bv[e]);
    store_pack<W>(h + p * W, hv);
  }
  DB_GRID_STRIDE_LOOP_FROM(i, packs * W, n) {
    h[i] = from_float<T>(swiglu_value(to_float(a[i]), to_float(b[i])));
  }
}

template <int W, class T>
__global__ void swiglu_backward_kernel(T* __restrict__ da, T* __restrict__ db,
                                       const T* __restrict__ dh, const T* __restrict__ a,
                                       const T* __restrict__ b, int64_t n) {
  const int64_t packs = n / W;
  DB_GRID_STRIDE_LOOP(p, packs) {
    float gv[W], av[W], bv[W], dav[W], dbv[W];
    load_pack<W>(dh + p * W, gv);
    load_pack<W>(a + p * W, av);
    load_pack<W>(b + p * W, bv);
#pragma unroll
    for (int e = 0; e < W; ++e) swiglu_gradients(gv[e], av[e], bv[e], dav[e], dbv[e]);
    store_pack<W>(da + p * W, dav);
    store_pack<W>(db + p * W, dbv);
  }
  DB_GRID_STRIDE_LOOP_FROM(i, packs * W, n) {
    float dav, dbv;
    swiglu_gradients(to_float(dh[i]), to_float(a[i]), to_float(b[i]), dav, dbv);
    da[i] = from_float<T>(dav);
    db[i] = from_float<T>(dbv);
  }
}

template <int W, class T>
void forward_launch(T* h, const T* a, const T* b, int64_t count, cudaStream_t stream) {
  swiglu_forward_kernel<W>
      <<<grid_for((count + W - 1) / W, kThreads), kThreads, 0, stream>>>(h, a, b, count);
  CUDA_CHECK_LAUNCH();
}

template <int W, class T>
void backward_launch(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count,
                     cudaStream_t stream) {
  swiglu_backward_kernel<W>
      <<<grid_for((count + W - 1) / W, kThreads), kThreads, 0, stream>>>(da, db, dh, a, b, count);
  CUDA_CHECK_LAUNCH();
}
}  // namespace

template <class T>
void swiglu_forward(T* h, const T* a, const T* b, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  constexpr int W = pack_width<T>();
  if (packs_aligned<W>(h, a, b))
    forward_launch<W>(h, a, b, count, stream);
  else
    forward_launch<1>(h, a, b, count, stream);
}

template <class T>
void swiglu_backward(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count,
                     cudaStream_t stream) {
  if (count <= 0) return;
  constexpr int W = pack_width<T>();
  if (packs_aligned<W>(da, db, dh, a, b))
    backward_launch<W>(da, db, dh, a, b, count, stream);
  else
    backward_launch<1>(da, db, dh, a, b, count, stream);
}

template <class T>
void swiglu_forward_scalar(T* h, const T* a, const T* b, int64_t count, cudaStream_t stream) {
  if (count > 0) forward_launch<1>(h, a, b, count, stream);
}

template <class T>
void swiglu_backward_scalar(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count,
                            cudaStream_t stream) {
  if (count > 0) backward_launch<1>(da, db, dh, a, b, count, stream);
}

#define DB_INSTANTIATE(T)                                                                        \
  template void swiglu_forward<T>(T*, const T*, const T*, int64_t, cudaStream_t);                \
  template void swiglu_backward<T>(T*, T*, const T*, const T*, const T*, int64_t, cudaStream_t); \
  template void swiglu_forward_scalar<T>(T*, const T*, const T*, int64_t, cudaStream_t);         \
  template void swiglu_backward_scalar<T>(T*, T*, const T*, const T*, const T*, int64_t,         \
                                          cudaStream_t);
DB_INSTANTIATE(float)
DB_INSTANTIATE(bf16)
#undef DB_INSTANTIATE

}  // namespace db::cuda
