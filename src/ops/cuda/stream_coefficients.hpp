// The per-token coefficients of HC (§7) and mHC (§8) on the GPU, from the row functions of
// ops/rows/stream_rows.hpp. The backward's parameter gradients are sums over tokens, made
// deterministic by column_sums.hpp (fixed row chunks, fixed-order final sum, no atomics).
// Semantics as in ops/ops.hpp; scalars such as s_alpha are device pointers.
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"

namespace db::cuda {

// mHC supports up to this many streams (a token's n² + 2n logit gradients sit in registers).
constexpr int kMaxMhcStreams = 8;

void hc_coefficients(float* alpha, float* beta, float* ta, float* tb, const float* static_alpha,
                     const float* static_beta, const float* s_alpha, const float* s_beta,
                     int64_t rows, int n, cudaStream_t stream);
void hc_coefficients_backward(float* dza, float* dzb, float* dstatic_alpha, float* dstatic_beta,
                              float* ds_alpha, float* ds_beta, const float* dalpha,
                              const float* dbeta, const float* ta, const float* tb,
                              const float* s_alpha, const float* s_beta, int64_t rows, int n,
                              cudaStream_t stream);

void mhc_coefficients(float* pre, float* post, float* res_logits, const float* z,
                      const float* gates, const float* bias, int64_t rows, int n,
                      cudaStream_t stream);
void mhc_coefficients_backward(float* dz, float* dgates, float* dbias, const float* dpre,
                               const float* dpost, const float* dres_logits, const float* z,
                               const float* pre, const float* post, const float* gates,
                               int64_t rows, int n, cudaStream_t stream);

}  // namespace db::cuda
