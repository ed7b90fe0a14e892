// QK-norm on bf16 (train.activation_dtype = bf16, model.qk_norm): RMSNorm over each head's
// head_dim values of q or k, one warp per row and eight rows per block, where rmsnorm.cu's
// kernels give a 256-thread block to each row (three quarters idle at head dim 64). A row's
// sums are added in the order of that block's (value j in lane j % 32 of slot j / 32), and the
// gain gradient's per-block partials cover the same 32 rows, added in the same order: y and rstd
// are the bits of rmsnorm<bf16, bf16>; dgain should be (the test allows 1e-6) and dx may differ
// by one bf16 rounding where the compiler contracts r·(ĝ − x̂·s) differently
// (tests/gpu/cuda_packed_kernels_test.cpp, doc/cuda.md).
//
// The _rope forms fuse the RoPE of attention_project and its inverse: the forward rounds the
// norm to bf16, then rotates it through the warp's shared row (the bits of rmsnorm_forward
// then rope_apply); the backward rotates dy back, rounds it, adds dy_extra (MoDA's gradient of
// the unrotated k, rounded: the bits of axpby) and runs the norm's backward on it, without
// writing dy back.
// Rows are (token·heads + head) of a [batch·seq_len, heads, head_dim] tensor. Gains, rstd and
// dgain fp32; g may be null (gain 1), dg null (no gain gradient).
#pragma once
#include <cstdint>

#include "ops/cuda/rope.hpp"
#include "ops/cuda/types.hpp"

namespace db::cuda {

// The widest row these kernels take; wider rows go to rmsnorm.cu's.
constexpr int kQkNormMaxWidth = 256;

void qk_norm_forward(bf16* y, float* rstd, const bf16* x, const float* g, int64_t rows, int d,
                     double eps, cudaStream_t stream = nullptr);
// dx overwritten (added when accumulate_dx); dg += Σ_rows dy ⊙ x·rstd.
void qk_norm_backward(bf16* dx, float* dg, const bf16* dy, const bf16* x, const float* g,
                      const float* rstd, int64_t rows, int d, bool accumulate_dx,
                      cudaStream_t stream = nullptr);

// y = rope(norm(x)); y_unrotated (optional) = norm(x). x, y [batch·seq_len, heads, hd].
void qk_norm_rope_forward(bf16* y, bf16* y_unrotated, float* rstd, const bf16* x, const float* g,
                          const RopeTable& table, int64_t batch, int seq_len, int heads, double eps,
                          cudaStream_t stream = nullptr);
// dx = norm'ᵀ(rope⁻¹(dy) + dy_extra) overwritten; dg added; dy_extra optional; dy unchanged.
void qk_norm_rope_backward(bf16* dx, float* dg, const bf16* dy, const bf16* dy_extra, const bf16* x,
                           const float* g, const float* rstd, const RopeTable& table, int64_t batch,
                           int seq_len, int heads, cudaStream_t stream = nullptr);

}  // namespace db::cuda
