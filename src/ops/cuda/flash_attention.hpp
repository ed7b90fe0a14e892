// Causal grouped-query attention on bf16 tensor cores (mma.sync m16n8k16, sm_80+), in the
// FlashAttention-2 structure: the fast twin of attention.hpp's fp32 reference kernel, with the
// same layouts and semantics (doc/cuda.md "Flash attention"):
//   q, o [B, T, H, hd]; k, v [B, T, H_kv, hd]; query head h reads kv head h / (H / H_kv);
//   softmax scale 1/sqrt(hd); lse [B, H, T] fp32, natural log, of the scaled scores.
// Products on tensor cores with bf16 inputs and fp32 accumulation; softmax, lse and the
// backward's D = rowsum(dO ∘ O) in fp32. Deterministic (no atomics).
#pragma once
#include "ops/cuda/types.hpp"
#include "ops/shapes.hpp"

namespace db::cuda {

using ::db::AttentionShape;

// Shapes it handles (head_dim 1..128, H % H_kv == 0, B·H < 65536); false → the caller falls back
// to the reference kernel.
bool flash_attention_supports(const AttentionShape& s);

// Writes o and lse. Throws db::Error for a shape flash_attention_supports rejects.
void flash_attention_forward(__nv_bfloat16* o, float* lse, const __nv_bfloat16* q,
                             const __nv_bfloat16* k, const __nv_bfloat16* v,
                             const AttentionShape& s, cudaStream_t stream);

// dq, dk, dv are overwritten (bf16). o and lse are the forward's. Uses an fp32 workspace of
// B·H·T floats from the backend's stream-ordered allocator (cuda_memory.hpp).
void flash_attention_backward(__nv_bfloat16* dq, __nv_bfloat16* dk, __nv_bfloat16* dv,
                              const __nv_bfloat16* d_o, const __nv_bfloat16* o, const float* lse,
                              const __nv_bfloat16* q, const __nv_bfloat16* k,
                              const __nv_bfloat16* v, const AttentionShape& s, cudaStream_t stream);

}  // namespace db::cuda
