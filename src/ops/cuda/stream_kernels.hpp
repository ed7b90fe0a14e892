// The n-stream state [rows, n, d] of HC (§7) and mHC (§8) on the GPU: the kernels only map
// threads to values; the per-token math is ops/rows/stream_rows.hpp, shared with the CPU loops
// (so the CPU tests cover it). Semantics as in ops/ops.hpp; every sum has a fixed order.
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"
#include "ops/ops.hpp"

namespace db::cuda {

void broadcast_streams(float* state, const float* x, int64_t rows, int n, int d,
                       cudaStream_t stream);
void sum_streams(float* out, const float* state, float scale, int64_t rows, int n, int d,
                 cudaStream_t stream);
void combine_streams(float* x, const float* H, const float* weights, int stride, int64_t rows,
                     int n, int d, cudaStream_t stream);
// dweights overwritten (one warp per dot, in double), dH added.
void combine_streams_backward(float* dweights, float* dH, const float* dx, const float* H,
                              const float* weights, int stride, int64_t rows, int n, int d,
                              cudaStream_t stream);
void mix_streams(float* out, const float* H, const float* y, const float* post, const float* mix,
                 StreamMapLayout map, int64_t rows, int n, int d, cudaStream_t stream);
// dy, dpost, dmix (map coefficients only), dH overwritten.
void mix_streams_backward(float* dy, float* dpost, float* dmix, float* dH, const float* g,
                          const float* H, const float* y, const float* post, const float* mix,
                          StreamMapLayout map, int64_t rows, int n, int d, cudaStream_t stream);

}  // namespace db::cuda
