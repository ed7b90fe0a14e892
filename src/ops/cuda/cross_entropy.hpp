// The LM head fused with log-softmax cross-entropy on the GPU, mirroring cpu/cross_entropy.hpp:
// logits = h·W_lmᵀ in row chunks (from fp32-accumulating GEMMs; fp32, or bf16 in the bf16 mode
// under bf16 activation storage), then one kernel per chunk computes each row's loss in fp32 and
// writes dlogits in the same pass (over the logits when they have the GEMMs' operand type, else
// into a bf16 chunk), so the [N, V] logits never exist at once.
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

// What the bf16 mode's head writes its logits in. bf16 (under bf16 activation storage, as
// PyTorch's autocast and llm.c do): the GEMM rounds its fp32 sums once, the loss kernel reads 2
// bytes per logit and writes dlogits over them; fp32: the logits as the GEMM sums them, dlogits
// in a bf16 chunk of their own (doc/performance.md, "The LM head in bf16").
enum class HeadLogits { fp32, bf16 };

// Precision::bf16 on float activations and weights (Ops::cross_entropy of the bf16 mode): W is
// narrowed to bf16 once per call and h per chunk (stream-ordered scratch), the three GEMMs run on
// bf16 operands with bf16 dlogits; the logits are `logits`, the softmax and the loss fp32, dh is
// written as float and dW (fp32) is added to. No operand rounding inside cuBLAS. Same contract
// as lm_head_cross_entropy_add.
void lm_head_cross_entropy_add_in_bf16(GemmHandle& gemm_handle, double* loss_sum, const float* h,
                                       const float* W, const int32_t* targets, const HeadShape& s,
                                       HeadLogits logits, float* dh, float* dW, double grad_scale,
                                       cudaStream_t stream = nullptr);

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

// The same in bf16 precision on float h and W (as lm_head_cross_entropy_add_in_bf16).
void lm_head_row_losses_in_bf16(GemmHandle& gemm_handle, double* losses, const float* h,
                                const float* W, const int32_t* targets, const HeadShape& s,
                                HeadLogits logits, cudaStream_t stream = nullptr);

// Plain fp32 logits [rows, vocab] (tests, diagnostics).
template <class T>
void lm_head_logits(GemmHandle& gemm_handle, float* logits, const T* h, const T* W,
                    const HeadShape& s, cudaStream_t stream = nullptr);

}  // namespace db::cuda
