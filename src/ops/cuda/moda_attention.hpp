// MoDA attention (§6) on the GPU, mirroring cpu/moda_attention.hpp: causal GQA attention whose
// softmax also covers `depth` same-token depth entries. q, o: [B, T, H, hd]; k, v:
// [B, T, H_kv, hd]; depth entries at ((n·depth_stride + m)·H_kv + g)·hd; lse [B, H, T] (the
// CPU layout). Scale 1/sqrt(hd).
//
// A straightforward kernel, correctness first: one warp per query row and head with an online
// softmax (forward), and in the backward one warp per (token, kv head) for dq and the depth
// gradients (the heads of a group in order, so no atomics) and one warp per (key, kv head) for
// dk, dv. O(T²·hd) work per head like the CPU, no tiling; head_dim ≤ 256.
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"
#include "ops/shapes.hpp"

namespace db::cuda {

void moda_attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                            const float* depth_k, const float* depth_v, const ModaShape& s,
                            cudaStream_t stream);

// dq, dk, dv overwritten; d_depth_k, d_depth_v (entries 0..depth−1) added.
void moda_attention_backward(float* dq, float* dk, float* dv, float* d_depth_k, float* d_depth_v,
                             const float* d_o, const float* o, const float* lse, const float* q,
                             const float* k, const float* v, const float* depth_k,
                             const float* depth_v, const ModaShape& s, cudaStream_t stream);

}  // namespace db::cuda
