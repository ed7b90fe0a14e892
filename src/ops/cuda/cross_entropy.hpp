// The LM head fused with log-softmax cross-entropy on the GPU, mirroring cpu/cross_entropy.hpp:
// logits = h·W_lmᵀ in row chunks (fp32 logits from fp32-accumulating GEMMs), then one kernel per
// chunk computes each row's loss and overwrites the logits with dlogits in the same pass, so
// the [N, V] logits never exist at once.
#pragma once
#include <cstdint>

#include "ops/cuda/gemm.hpp"
#include "ops/cuda/types.hpp"
#include "ops/shapes.hpp"

namespace db::cuda {

using ::db::HeadShape;

// Adds the summed loss (double) to *loss_sum (device memory) without synchronising: the
// micro-batches of a step accumulate on the device (Ops::cross_entropy). With dh != null also
// computes gradients of loss_sum·grad_scale: dh overwritten, dW (fp32) += . Rows with target < 0
// add nothing.
template <class T>
void lm_head_cross_entropy_add(GemmHandle& gemm_handle, double* loss_sum, const T* h, const T* W,
                               const int32_t* targets, const HeadShape& s, T* dh, float* dW,
                               double grad_scale, cudaStream_t stream = nullptr);

// The same, returning the summed loss (double; synchronises the stream): the tests' form. With dh
// != null also computes gradients of loss_sum·grad_scale: dh overwritten, dW (fp32) += . Rows with
// target < 0 add nothing.
template <class T>
double lm_head_cross_entropy(GemmHandle& gemm_handle, const T* h, const T* W,
                             const int32_t* targets, const HeadShape& s, T* dh, float* dW,
                             double grad_scale, cudaStream_t stream = nullptr);

// Each row's loss (0 where target < 0) into host memory losses[rows] (synchronises the stream).
template <class T>
void lm_head_row_losses(GemmHandle& gemm_handle, double* losses, const T* h, const T* W,
                        const int32_t* targets, const HeadShape& s, cudaStream_t stream = nullptr);

// Plain fp32 logits [rows, vocab] (tests, diagnostics).
template <class T>
void lm_head_logits(GemmHandle& gemm_handle, float* logits, const T* h, const T* W,
                    const HeadShape& s, cudaStream_t stream = nullptr);

}  // namespace db::cuda
