#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/packed_access.cuh"
#include "ops/cuda/swiglu.hpp"

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

// Packs of W values from `head` on (packed_access.cuh, for_each_pack), the head and the values
// after the last pack one per thread.
template <int W, class T>
__global__ void swiglu_forward_kernel(T* __restrict__ h, const T* __restrict__ a,
                                      const T* __restrict__ b, int64_t n, int64_t head) {
  for_each_pack<W>(
      n, head,
      [&](int64_t i) {
        float av[W], bv[W], hv[W];
        load_pack<W>(a + i, av);
        load_pack<W>(b + i, bv);
#pragma unroll
        for (int e = 0; e < W; ++e) hv[e] = swiglu_value(av[e], bv[e]);
        store_pack<W>(h + i, hv);
      },
      [&](int64_t i) { h[i] = from_float<T>(swiglu_value(to_float(a[i]), to_float(b[i]))); });
}

template <int W, class T>
__global__ void swiglu_backward_kernel(T* __restrict__ da, T* __restrict__ db,
                                       const T* __restrict__ dh, const T* __restrict__ a,
                                       const T* __restrict__ b, int64_t n, int64_t head) {
  for_each_pack<W>(
      n, head,
      [&](int64_t i) {
        float gv[W], av[W], bv[W], dav[W], dbv[W];
        load_pack<W>(dh + i, gv);
        load_pack<W>(a + i, av);
        load_pack<W>(b + i, bv);
#pragma unroll
        for (int e = 0; e < W; ++e) swiglu_gradients(gv[e], av[e], bv[e], dav[e], dbv[e]);
        store_pack<W>(da + i, dav);
        store_pack<W>(db + i, dbv);
      },
      [&](int64_t i) {
        float dav, dbv;
        swiglu_gradients(to_float(dh[i]), to_float(a[i]), to_float(b[i]), dav, dbv);
        da[i] = from_float<T>(dav);
        db[i] = from_float<T>(dbv);
      });
}

template <int W, class T>
void forward_launch(T* h, const T* a, const T* b, int64_t count, int64_t head,
                    cudaStream_t stream) {
  launch(swiglu_forward_kernel<W, T>, grid_for((count + W - 1) / W, kThreads), kThreads, 0, stream,
         h, a, b, count, head);
  CUDA_CHECK_LAUNCH();
}

template <int W, class T>
void backward_launch(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count, int64_t head,
                     cudaStream_t stream) {
  launch(swiglu_backward_kernel<W, T>, grid_for((count + W - 1) / W, kThreads), kThreads, 0, stream,
         da, db, dh, a, b, count, head);
  CUDA_CHECK_LAUNCH();
}
}  // namespace

template <class T>
void swiglu_forward(T* h, const T* a, const T* b, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  constexpr int W = pack_width<T>();
  const int64_t head = pack_head<W>(count, h, a, b);
  if (head >= 0)
    forward_launch<W>(h, a, b, count, head, stream);
  else
    forward_launch<1>(h, a, b, count, 0, stream);
}

template <class T>
void swiglu_backward(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count,
                     cudaStream_t stream) {
  if (count <= 0) return;
  constexpr int W = pack_width<T>();
  const int64_t head = pack_head<W>(count, da, db, dh, a, b);
  if (head >= 0)
    backward_launch<W>(da, db, dh, a, b, count, head, stream);
  else
    backward_launch<1>(da, db, dh, a, b, count, 0, stream);
}

template <class T>
void swiglu_forward_scalar(T* h, const T* a, const T* b, int64_t count, cudaStream_t stream) {
  if (count > 0) forward_launch<1>(h, a, b, count, 0, stream);
}

template <class T>
void swiglu_backward_scalar(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count,
                            cudaStream_t stream) {
  if (count > 0) backward_launch<1>(da, db, dh, a, b, count, 0, stream);
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
