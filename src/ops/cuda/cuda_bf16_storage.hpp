// bf16 activation storage on the GPU (train.activation_dtype = bf16, ops/storage_ops.hpp): the
// CUDA ops' bf16_storage(). The sublayer cores' hot ops read and write bf16 directly — the
// products through cuBLASLt's bf16 GEMMs (fp32 accumulation, dW into the fp32 gradient), the
// QK RMSNorm (one warp per row, fused with RoPE: qk_norm.hpp), RoPE, SwiGLU, axpby and the
// copies through the bf16 instantiations of this folder's kernels (16-byte accesses where
// aligned: packed_access.cuh), attention and MoDA through the fast path of the shape (cuDNN or
// flash) fed the bf16 tensors themselves. Every value is computed in fp32 and rounded once where
// stored, as the widening implementation (ops/storage_ops_widening.hpp) rounds it; that
// implementation stays the fallback for the shapes whose attention path is the fp32 reference
// kernel (train.attention = reference, or fp32 precision under auto). doc/cuda.md "bf16 activation
// storage on the GPU".
//
// Everything runs on current_stream() (op_stream.hpp), scratch from the stream-ordered pool: a
// captured micro-batch records these calls like the fp32 ones.
#pragma once
#include "core/bfloat16.hpp"
#include "ops/cuda/attention_paths.hpp"
#include "ops/cuda/gemm.hpp"
#include "ops/cuda/rope.hpp"
#include "ops/storage_ops_widening.hpp"

namespace db::cuda {

class CudaBf16Storage final : public WideningStorageOps<float, bfloat16> {
 public:
  // ops: the fp32 ops of the fallback; gemm, attention, rope: that ops object's own, so that
  // both see one GEMM plan cache, one attention report and one RoPE table. All must outlive this.
  CudaBf16Storage(Ops<float>& ops, GemmHandle& gemm, AttentionPaths& attention, RopeCache& rope)
      : WideningStorageOps(ops), gemm_(gemm), attention_(attention), rope_(rope) {}

  void narrow(bfloat16* dst, const float* src, int64_t count) override;
  void widen(float* dst, const bfloat16* src, int64_t count) override;

  void linear_forward(bfloat16* y, const bfloat16* x, const bfloat16* W, int64_t rows, int in,
                      int out) override;
  void linear_forward_wide(float* y, const bfloat16* x, const bfloat16* W, int64_t rows, int in,
                           int out) override;
  void linear_backward(bfloat16* dx, float* dW, const bfloat16* dy, const bfloat16* x,
                       const bfloat16* W, int64_t rows, int in, int out,
                       bool accumulate_dx) override;
  void linear_backward_wide(float* dx, float* dW, const bfloat16* dy, const bfloat16* x,
                            const bfloat16* W, int64_t rows, int in, int out,
                            bool accumulate_dx) override;

  void rmsnorm_forward(bfloat16* y, float* rstd, const bfloat16* x, const float* gain, int64_t rows,
                       int width, double eps) override;
  void rmsnorm_backward(bfloat16* dx, float* dgain, const bfloat16* dy, const bfloat16* x,
                        const float* gain, const float* rstd, int64_t rows, int width,
                        bool accumulate_dx) override;
  void rope(bfloat16* x, int64_t batch, int seq_len, int heads, int head_dim, double theta,
            bool inverse) override;
  void rope_qk(bfloat16* q, int heads, bfloat16* k, int kv_heads, int64_t batch, int seq_len,
               int head_dim, double theta, bool inverse) override;
  void qk_norm_rope_forward(bfloat16* y, float* rstd, bfloat16* y_unrotated, const bfloat16* x,
                            const float* gain, int64_t batch, int seq_len, int heads, int head_dim,
                            double eps, double theta) override;
  void qk_norm_rope_backward(bfloat16* dx, float* dgain, bfloat16* dy, const bfloat16* dy_unrotated,
                             const bfloat16* x, const float* gain, const float* rstd, int64_t batch,
                             int seq_len, int heads, int head_dim, double theta) override;

  void attention_forward(bfloat16* o, float* lse, const bfloat16* q, const bfloat16* k,
                         const bfloat16* v, const AttentionShape& s) override;
  void attention_backward(bfloat16* dq, bfloat16* dk, bfloat16* dv, const bfloat16* d_o,
                          const bfloat16* o, const float* lse, const bfloat16* q, const bfloat16* k,
                          const bfloat16* v, const AttentionShape& s) override;
  void moda_attention_forward(bfloat16* o, float* lse, const bfloat16* q, const bfloat16* k,
                              const bfloat16* v, const bfloat16* depth_k, const bfloat16* depth_v,
                              const ModaShape& s) override;
  void moda_attention_backward(bfloat16* dq, bfloat16* dk, bfloat16* dv, bfloat16* d_depth_k,
                               bfloat16* d_depth_v, const bfloat16* d_o, const bfloat16* o,
                               const float* lse, const bfloat16* q, const bfloat16* k,
                               const bfloat16* v, const bfloat16* depth_k, const bfloat16* depth_v,
                               const ModaShape& s) override;

  void swiglu_forward(bfloat16* h, const bfloat16* a, const bfloat16* b, int64_t count) override;
  void swiglu_backward(bfloat16* da, bfloat16* db, const bfloat16* dh, const bfloat16* a,
                       const bfloat16* b, int64_t count) override;

  void copy(bfloat16* dst, const bfloat16* src, int64_t count) override;
  void axpby(bfloat16* y, float a, const bfloat16* x, float b, int64_t count) override;
  void copy_rows(bfloat16* dst, int64_t dst_stride, const bfloat16* src, int64_t src_stride,
                 int64_t rows, int width) override;

 private:
  GemmHandle& gemm_;
  AttentionPaths& attention_;
  RopeCache& rope_;
};

}  // namespace db::cuda
