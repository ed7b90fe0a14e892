// The depth-softmax mix of Attention Residuals (spec §9/§10), per token over m sources:
//   K_i = g ⊙ v_i / sqrt(mean(v_i²) + eps)   (key RMSNorm with a learnable gain),
//   w = softmax_i(q · K_i),   h = Σ_i w_i · v_i   (values raw, no temperature).
// Key norm, logits, softmax and weighted sum run in one pass per token (O(m·d)).
#pragma once
#include <cstdint>

#include "ops/shapes.hpp"

namespace db::cpu {

using ::db::DepthMixShape;

// sources[i]: [rows, d]; h: [rows, d]; weights, rstd: [rows, m] kept for the backward.
template <class T>
void depth_softmax_forward(T* h, T* weights, T* rstd, const T* const* sources, const T* query,
                           const T* key_gain, DepthMixShape s);

// dsources[i] += ∂loss/∂v_i (accumulated; each entry must be a distinct buffer); dquery and
// dkey_gain accumulate too.
template <class T>
void depth_softmax_backward(T* const* dsources, T* dquery, T* dkey_gain, const T* dh,
                            const T* const* sources, const T* weights, const T* rstd,
                            const T* query, const T* key_gain, DepthMixShape s);

}  // namespace db::cpu
