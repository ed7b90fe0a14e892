// The LM head fused with log-softmax cross-entropy, in row chunks so the [N, V] logits never
// exist at once: logits = h·W_lmᵀ, loss = Σ (logsumexp − logit[target]) over rows whose
// target is ≥ 0 (the last position of a window has none).
#pragma once
#include <cstdint>

#include "ops/shapes.hpp"

namespace db::cpu {

using ::db::HeadShape;

// Returns the summed loss (double). With dh != null also computes gradients for
// d(loss_sum·grad_scale): dh overwritten, dW += .
template <class T>
double lm_head_cross_entropy(const T* h, const T* W, const int32_t* targets, const HeadShape& s,
                             T* dh, T* dW, double grad_scale);

// Plain logits [rows, vocab] (tests, diagnostics).
template <class T>
void lm_head_logits(T* logits, const T* h, const T* W, const HeadShape& s);

}  // namespace db::cpu
