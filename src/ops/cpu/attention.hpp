// Causal scaled-dot-product attention with grouped-query heads (spec §0).
// q, o: [B, T, H, hd]; k, v: [B, T, H_kv, hd]; query head h reads kv head h / (H / H_kv).
// The forward keeps only the log-sum-exp per row; the backward recomputes the probabilities
// (flash-attention style), so memory stays O(T) per head instead of O(T²) per layer.
#pragma once
#include <cstdint>

#include "ops/shapes.hpp"

namespace db::cpu {

using ::db::AttentionShape;

template <class T>
void attention_forward(T* o, T* lse, const T* q, const T* k, const T* v, const AttentionShape& s);

// dq, dk, dv are overwritten.
template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* d_o, const T* o, const T* lse, const T* q,
                        const T* k, const T* v, const AttentionShape& s);

}  // namespace db::cpu
