#include <string>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/moda_depth_merge.hpp"
#include "ops/moda_depth_merge.hpp"

namespace db::cuda {
namespace {

constexpr int kWarpsPerBlock = 4;

// One warp per row: lane l holds values l, l + 32, ... of a head vector (8 registers at
// head_dim 256) and the dot products are warp sums that every lane receives.
using detail::WarpLanes;

// This warp's item (row n = b·T + t, head) among rows·heads_per_row; false past the end (whole
// warps leave together, so the warp sums see every lane).
__device__ __forceinline__ bool warp_item(int64_t& n, int& head, int64_t rows, int heads_per_row) {
  const int64_t item = int64_t(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  if (item >= rows * heads_per_row) return false;
  n = item / heads_per_row;
  head = int(item % heads_per_row);
  return true;
}

// T: the tensors' type (fp32, or bf16 under bf16 activation storage); lse and the math in fp32.
template <class T>
__global__ void merge_forward_kernel(T* __restrict__ o, float* __restrict__ lse,
                                     const T* __restrict__ q, const T* __restrict__ depth_k,
                                     const T* __restrict__ depth_v, ModaShape s) {
  int64_t n;
  int h;
  if (!warp_item(n, h, s.batch * s.seq_len, s.heads)) return;
  moda_merge::forward_row<float>(o, lse, q, depth_k, depth_v, s, n, h, WarpLanes{});
}

// One warp per (token, kv head): the query heads of the group in order, so the token's depth
// gradients of that kv head have one writer. With bf16 depth gradients each query head's
// addition is rounded (group roundings per entry; doc/cuda.md "bf16 activation storage").
template <class T>
__global__ void merge_backward_kernel(T* __restrict__ dq, T* __restrict__ d_depth_k,
                                      T* __restrict__ d_depth_v, const T* __restrict__ d_o,
                                      const T* __restrict__ o, const float* __restrict__ lse,
                                      const T* __restrict__ q, const T* __restrict__ depth_k,
                                      const T* __restrict__ depth_v, ModaShape s) {
  int64_t n;
  int g;
  if (!warp_item(n, g, s.batch * s.seq_len, s.kv_heads)) return;
  moda_merge::backward_row<float>(dq, d_depth_k, d_depth_v, d_o, o, lse, q, depth_k, depth_v, s, n,
                                  g, WarpLanes{});
}

void check_shape(const ModaShape& s) {
  CUDA_REQUIRE(
      s.head_dim >= 1 && s.head_dim <= moda_merge::kMaxHeadDim,
      "moda depth merge: head_dim must be in 1.." + std::to_string(moda_merge::kMaxHeadDim));
  CUDA_REQUIRE(s.kv_heads >= 1 && s.heads % s.kv_heads == 0,
               "moda depth merge: heads must be a multiple of kv_heads");
  CUDA_REQUIRE(s.depth >= 0 && s.depth <= s.depth_stride,
               "moda depth merge: depth must be in 0..depth_stride");
}

unsigned blocks_for(int64_t warps) {
  return unsigned((warps + kWarpsPerBlock - 1) / kWarpsPerBlock);
}

template <class T>
void merge_forward(T* o, float* lse, const T* q, const T* depth_k, const T* depth_v,
                   const ModaShape& s, cudaStream_t stream) {
  const int64_t rows = s.batch * s.seq_len;
  if (rows <= 0 || s.depth == 0) return;
  check_shape(s);
  launch(merge_forward_kernel<T>, blocks_for(rows * s.heads), 32 * kWarpsPerBlock, 0, stream, o,
         lse, q, depth_k, depth_v, s);
  CUDA_CHECK_LAUNCH();
}

template <class T>
void merge_backward(T* dq, T* d_depth_k, T* d_depth_v, const T* d_o, const T* o, const float* lse,
                    const T* q, const T* depth_k, const T* depth_v, const ModaShape& s,
                    cudaStream_t stream) {
  const int64_t rows = s.batch * s.seq_len;
  if (rows <= 0 || s.depth == 0) return;
  check_shape(s);
  launch(merge_backward_kernel<T>, blocks_for(rows * s.kv_heads), 32 * kWarpsPerBlock, 0, stream,
         dq, d_depth_k, d_depth_v, d_o, o, lse, q, depth_k, depth_v, s);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void moda_depth_merge_forward(float* o, float* lse, const float* q, const float* depth_k,
                              const float* depth_v, const ModaShape& s, cudaStream_t stream) {
  merge_forward(o, lse, q, depth_k, depth_v, s, stream);
}
void moda_depth_merge_forward(bf16* o, float* lse, const bf16* q, const bf16* depth_k,
                              const bf16* depth_v, const ModaShape& s, cudaStream_t stream) {
  merge_forward(o, lse, q, depth_k, depth_v, s, stream);
}

void moda_depth_merge_backward(float* dq, float* d_depth_k, float* d_depth_v, const float* d_o,
                               const float* o, const float* lse, const float* q,
                               const float* depth_k, const float* depth_v, const ModaShape& s,
                               cudaStream_t stream) {
  merge_backward(dq, d_depth_k, d_depth_v, d_o, o, lse, q, depth_k, depth_v, s, stream);
}
void moda_depth_merge_backward(bf16* dq, bf16* d_depth_k, bf16* d_depth_v, const bf16* d_o,
                               const bf16* o, const float* lse, const bf16* q, const bf16* depth_k,
                               const bf16* depth_v, const ModaShape& s, cudaStream_t stream) {
  merge_backward(dq, d_depth_k, d_depth_v, d_o, o, lse, q, depth_k, depth_v, s, stream);
}

}  // namespace db::cuda
