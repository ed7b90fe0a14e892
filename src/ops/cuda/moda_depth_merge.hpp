// The depth part of MoDA's fast path (doc/cuda.md "MoDA through the fast attention"): after the
// sequence part ran through cuDNN or our flash kernel (attention_paths.hpp), these kernels merge
// the depth entries through the log-sum-exp, one warp per (token, head), running the DB_HD
// functions of ops/moda_depth_merge.hpp (the CPU test runs the same bodies). fp32 or bf16
// tensors (bf16 activation storage) in the layouts of moda_attention.hpp, lse and the math in
// fp32; head_dim ≤ 256.
#pragma once
#include "ops/cuda/types.hpp"
#include "ops/shapes.hpp"

namespace db::cuda {

// o, lse: the sequence part's on entry, the joint softmax's on return.
void moda_depth_merge_forward(float* o, float* lse, const float* q, const float* depth_k,
                              const float* depth_v, const ModaShape& s, cudaStream_t stream);
void moda_depth_merge_forward(bf16* o, float* lse, const bf16* q, const bf16* depth_k,
                              const bf16* depth_v, const ModaShape& s, cudaStream_t stream);

// dq: the sequence part's gradient (the attention backward given the joint o and lse), the
// depth part added; d_depth_k, d_depth_v added to.
void moda_depth_merge_backward(float* dq, float* d_depth_k, float* d_depth_v, const float* d_o,
                               const float* o, const float* lse, const float* q,
                               const float* depth_k, const float* depth_v, const ModaShape& s,
                               cudaStream_t stream);
void moda_depth_merge_backward(bf16* dq, bf16* d_depth_k, bf16* d_depth_v, const bf16* d_o,
                               const bf16* o, const float* lse, const bf16* q, const bf16* depth_k,
                               const bf16* depth_v, const ModaShape& s, cudaStream_t stream);

}  // namespace db::cuda
