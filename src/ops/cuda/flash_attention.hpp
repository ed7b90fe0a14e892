// Our bf16 flash attention on tensor cores (train.attention = flash), the interface agreed with
// its kernel's author: causal, softmax scale 1/sqrt(hd), fp32 accumulation; q, o [B, T, H, hd];
// k, v [B, T, H_kv, hd]; lse [B, H, T] fp32, the layout of attention.hpp.
#pragma once
#include "ops/cuda/attention.hpp"
#include "ops/cuda/types.hpp"

namespace db::cuda {

// Shapes it handles (head_dim ≤ 128 here; GQA by H % H_kv == 0); false → caller falls back.
bool flash_attention_supports(const AttentionShape& s);
void flash_attention_forward(__nv_bfloat16* o, float* lse, const __nv_bfloat16* q,
                             const __nv_bfloat16* k, const __nv_bfloat16* v,
                             const AttentionShape& s, cudaStream_t st);
// dq, dk, dv overwritten (bf16); may use an fp32 workspace it allocates through db::cuda's
// stream-ordered allocator (cuda_memory.hpp).
void flash_attention_backward(__nv_bfloat16* dq, __nv_bfloat16* dk, __nv_bfloat16* dv,
                              const __nv_bfloat16* d_o, const __nv_bfloat16* o, const float* lse,
                              const __nv_bfloat16* q, const __nv_bfloat16* k,
                              const __nv_bfloat16* v, const AttentionShape& s, cudaStream_t st);

}  // namespace db::cuda
