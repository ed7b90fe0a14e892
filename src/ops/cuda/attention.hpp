// Fused (flash-style) causal attention with grouped-query heads on the GPU, mirroring
// cpu/attention.hpp (spec §0): q, o [B, T, H, hd]; k, v [B, T, H_kv, hd]; query head h reads
// kv head h / (H / H_kv); softmax scale 1/sqrt(hd).
//
// The forward streams key/value tiles through shared memory with an online softmax and keeps
// only the fp32 log-sum-exp per row ([B, H, T]); the T×T matrix never exists. The backward
// recomputes the probabilities tile by tile: one kernel accumulates dK, dV per key tile (over
// every query head of its group, so GQA needs no atomics), one accumulates dQ per query tile.
// Every head_dim up to 128 is supported: tiles are padded to 64 or 128 inside the kernel and
// the padding is zero-filled. Math in fp32; T (float or bf16) is only the I/O type.
#pragma once
#include <cstdint>

#include "ops/shapes.hpp"
#include "ops/cuda/types.hpp"

namespace db::cuda {

using ::db::AttentionShape;

template <class T>
void attention_forward(T* o, float* lse, const T* q, const T* k, const T* v,
                       const AttentionShape& s, cudaStream_t stream = nullptr);

// dq, dk, dv are overwritten.
template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* d_o, const T* o, const float* lse, const T* q,
                        const T* k, const T* v, const AttentionShape& s,
                        cudaStream_t stream = nullptr);

}  // namespace db::cuda
