// MoDA attention (spec §6): causal scaled-dot-product attention whose softmax also covers, for
// the same token, `depth` extra key/value entries (the depth entries of earlier blocks), under
// one joint softmax with the same 1/sqrt(head_dim) scale:
//   o_t = Σ_{j≤t} p_tj·v_j + Σ_m p_tm·V^d_tm,  p = softmax_{j≤t, m<depth}(q_t·k_j, q_t·K^d_tm)/√hd.
// q, o: [B, T, H, hd]; k, v: [B, T, H_kv, hd]; query head h reads kv head h / (H / H_kv) for
// both kinds of entries. Like cpu::attention the forward keeps the joint log-sum-exp per row and
// the backward recomputes the probabilities. With depth = 0 it is plain causal attention.
#pragma once
#include <cstdint>

#include "ops/shapes.hpp"

namespace db::cpu {

using ::db::ModaShape;

template <class T>
void moda_attention_forward(T* o, T* lse, const T* q, const T* k, const T* v, const T* depth_k,
                            const T* depth_v, const ModaShape& s);

// dq, dk, dv are overwritten; d_depth_k, d_depth_v (entries 0..depth−1) are added to.
template <class T>
void moda_attention_backward(T* dq, T* dk, T* dv, T* d_depth_k, T* d_depth_v, const T* d_o,
                             const T* o, const T* lse, const T* q, const T* k, const T* v,
                             const T* depth_k, const T* depth_v, const ModaShape& s);

}  // namespace db::cpu
