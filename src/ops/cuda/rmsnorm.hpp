// RMSNorm and bias-free LayerNorm on the GPU (spec §0, §4), mirroring cpu/rmsnorm.hpp.
// All statistics in fp32 whatever the element types: TX is the input (and dx) type, TY the
// output (and dy) type, so a fp32 residual stream can feed a bf16 sublayer input.
// Instantiated for (float, float), (bf16, bf16) and (float, bf16). Gains and their gradients
// are fp32 (master weights); g may be null (gain 1), dg null (no gain gradient).
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"

namespace db::cuda {

template <class TX, class TY>
void rmsnorm_forward(TY* y, float* rstd, const TX* x, const float* g, int64_t N, int d, double eps,
                     cudaStream_t stream = nullptr);

// dx overwritten (added when accumulate_dx); dg += Σ_rows dy ⊙ x·rstd (deterministic order).
template <class TX, class TY>
void rmsnorm_backward(TX* dx, float* dg, const TY* dy, const TX* x, const float* g,
                      const float* rstd, int64_t N, int d, bool accumulate_dx = false,
                      cudaStream_t stream = nullptr);

template <class TX, class TY>
void layernorm_forward(TY* y, float* mean, float* rstd, const TX* x, const float* g, int64_t N,
                       int d, double eps, cudaStream_t stream = nullptr);
template <class TX, class TY>
void layernorm_backward(TX* dx, float* dg, const TY* dy, const TX* x, const float* g,
                        const float* mean, const float* rstd, int64_t N, int d,
                        bool accumulate_dx = false, cudaStream_t stream = nullptr);

namespace detail {
// The backward's rows per block, one gain-gradient partial row per block, and the fixed-order
// sum of those partials into dg: shared with qk_norm.cu, whose dgain has these bits.
constexpr int kNormBackwardRowsPerBlock = 32;
void add_norm_partials(float* dg, const float* partial, int blocks, int d, cudaStream_t stream);
}  // namespace detail

}  // namespace db::cuda
