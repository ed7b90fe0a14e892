// The ops interface: everything the model code (src/model) computes goes through one of these
// calls, and a backend implements them all — the CPU backend (ops/cpu/cpu_ops.*, float and
// double) and the CUDA backend (ops/cuda/cuda_ops.*, float). Every pointer is in the backend's
// memory space (space()) unless a comment says "host"; tensors are row-major, `rows` tokens
// by `width` (or d) values. "Overwritten" and "added" say whether an output is assigned or
// accumulated; parameter gradients are always added.
//
// Row and token math that a backend loops over lives in __host__ __device__ functions under
// ops/rows/, shared by the CPU loops and the CUDA kernels.
#pragma once
#include <cstdint>
#include <memory>

#include "core/memory.hpp"
#include "ops/shapes.hpp"

namespace db {

// Where the coefficients of a per-token n×n stream map sit (stream_mix): M(r, i, j) — the
// weight of input stream j in output stream i of token r — is mix[r·row + i·out + j·in + offset].
// HC (§7): mix = α [rows, n, n+1], M(r,i,j) = α[r, j, 1+i]: {row n(n+1), out 1, in n+1, offset 1}.
// mHC (§8): mix = H_res [rows, n, n], M(r,i,j) = H_res[r, i, j]: {row n², out n, in 1, offset 0}.
struct StreamMapLayout {
  int64_t row;
  int out, in, offset;
};

template <class T>
class Ops {
 public:
  virtual ~Ops() = default;
  virtual MemorySpace space() const = 0;
  virtual const char* name() const = 0;

  // --- products -----------------------------------------------------------------------------
  // C[M,N] = alpha·op(A)·op(B) + beta·C, row-major with leading dimensions.
  virtual void gemm(bool trans_a, bool trans_b, int M, int N, int K, T alpha, const T* A, int lda,
                    const T* B, int ldb, T beta, T* C, int ldc) = 0;
  // y = x·Wᵀ, W [out, in]; backward: dx = dy·W (overwritten, or added when accumulate_dx),
  // dW += dyᵀ·x.
  virtual void linear_forward(T* y, const T* x, const T* W, int64_t rows, int in, int out) = 0;
  virtual void linear_backward(T* dx, T* dW, const T* dy, const T* x, const T* W, int64_t rows,
                               int in, int out, bool accumulate_dx) = 0;

  // --- norms over rows (gain null: gain 1; dgain null: no gain gradient) ----------------------
  virtual void rmsnorm_forward(T* y, T* rstd, const T* x, const T* gain, int64_t rows, int width,
                               double eps) = 0;
  virtual void rmsnorm_backward(T* dx, T* dgain, const T* dy, const T* x, const T* gain,
                                const T* rstd, int64_t rows, int width, bool accumulate_dx) = 0;
  // Bias-free LayerNorm (DeepNorm's block norms).
  virtual void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gain, int64_t rows,
                                 int width, double eps) = 0;
  virtual void layernorm_backward(T* dx, T* dgain, const T* dy, const T* x, const T* gain,
                                  const T* mean, const T* rstd, int64_t rows, int width,
                                  bool accumulate_dx) = 0;

  // --- attention sublayer pieces --------------------------------------------------------------
  // Rotary embedding in place on x [batch·seq_len, heads, head_dim] (rotate-half pairs (i,
  // i+hd/2)); inverse applies the transpose (the backward). The backend caches the tables.
  virtual void rope(T* x, int64_t batch, int seq_len, int heads, int head_dim, double theta,
                    bool inverse) = 0;
  // Causal GQA attention; lse [rows, heads] kept for the backward; dq, dk, dv overwritten.
  virtual void attention_forward(T* o, T* lse, const T* q, const T* k, const T* v,
                                 const AttentionShape& s) = 0;
  virtual void attention_backward(T* dq, T* dk, T* dv, const T* d_o, const T* o, const T* lse,
                                  const T* q, const T* k, const T* v, const AttentionShape& s) = 0;
  // MoDA (§6): attention whose softmax also covers `depth` same-token depth entries;
  // d_depth_k, d_depth_v added.
  virtual void moda_attention_forward(T* o, T* lse, const T* q, const T* k, const T* v,
                                      const T* depth_k, const T* depth_v, const ModaShape& s) = 0;
  virtual void moda_attention_backward(T* dq, T* dk, T* dv, T* d_depth_k, T* d_depth_v,
                                       const T* d_o, const T* o, const T* lse, const T* q,
                                       const T* k, const T* v, const T* depth_k, const T* depth_v,
                                       const ModaShape& s) = 0;
  // h = silu(a)·b; da, db overwritten.
  virtual void swiglu_forward(T* h, const T* a, const T* b, int64_t count) = 0;
  virtual void swiglu_backward(T* da, T* db, const T* dh, const T* a, const T* b,
                               int64_t count) = 0;

  // --- embedding and LM head ------------------------------------------------------------------
  virtual void embedding_forward(T* x, const int32_t* tokens, const T* table, int64_t rows,
                                 int d) = 0;
  virtual void embedding_backward(T* dtable, const int32_t* tokens, const T* dx, int64_t rows,
                                  int d) = 0;
  // Σ over rows with target ≥ 0 of the cross-entropy of softmax(h·Wᵀ) (returned to the host).
  // With dh non-null also the gradients of grad_scale·sum: dh overwritten, dW added.
  virtual double cross_entropy(const T* h, const T* W, const int32_t* targets, const HeadShape& s,
                               T* dh, T* dW, double grad_scale) = 0;
  // Each row's loss (0 where target < 0), into host memory losses[rows].
  virtual void cross_entropy_rows(double* losses, const T* h, const T* W, const int32_t* targets,
                                  const HeadShape& s) = 0;
  virtual void logits(T* out, const T* h, const T* W, const HeadShape& s) = 0;

  // --- element-wise ---------------------------------------------------------------------------
  virtual void copy(T* dst, const T* src, int64_t count) = 0;
  // y = b·y + a·x (b = 0 overwrites y).
  virtual void axpby(T* y, T a, const T* x, T b, int64_t count) = 0;
  // dst rows of `width` values from src rows: dst[r·dst_stride + j] = src[r·src_stride + j].
  virtual void copy_rows(T* dst, int64_t dst_stride, const T* src, int64_t src_stride, int64_t rows,
                         int width) = 0;

  // --- the n-stream state [rows, n, d] of HC (§7) and mHC (§8) --------------------------------
  // state[r, s] = x[r] for every stream s.
  virtual void broadcast_streams(T* state, const T* x, int64_t rows, int n, int d) = 0;
  // out[r] = scale·Σ_s state[r, s] (overwritten).
  virtual void sum_streams(T* out, const T* state, T scale, int64_t rows, int n, int d) = 0;
  // x[r] = Σ_s w_rs·H[r, s], w_rs = weights[(r·n + s)·stride] (overwritten).
  virtual void combine_streams(T* x, const T* H, const T* weights, int stride, int64_t rows, int n,
                               int d) = 0;
  // Its backward: dweights[(r·n + s)·stride] = ⟨dx[r], H[r, s]⟩ (overwritten),
  // dH[r, s] += w_rs·dx[r].
  virtual void combine_streams_backward(T* dweights, T* dH, const T* dx, const T* H,
                                        const T* weights, int stride, int64_t rows, int n,
                                        int d) = 0;
  // out[r, i] = post[r·n + i]·y[r] + Σ_j M(r, i, j)·H[r, j] (overwritten).
  virtual void mix_streams(T* out, const T* H, const T* y, const T* post, const T* mix,
                           StreamMapLayout map, int64_t rows, int n, int d) = 0;
  // Its backward from g = ∂/∂out: dy[r] = Σ_i post_ri·g[r, i], dpost[r·n + i] = ⟨g[r, i], y[r]⟩,
  // dmix at M(r, i, j)'s place = ⟨g[r, i], H[r, j]⟩, dH[r, j] = Σ_i M(r, i, j)·g[r, i] (all
  // overwritten; dmix entries that are not map coefficients are left alone).
  virtual void mix_streams_backward(T* dy, T* dpost, T* dmix, T* dH, const T* g, const T* H,
                                    const T* y, const T* post, const T* mix, StreamMapLayout map,
                                    int64_t rows, int n, int d) = 0;

  // --- HC coefficients (§7) -------------------------------------------------------------------
  // In: ta [rows·n, n+1], tb [rows·n] pre-activations Hn·W, replaced by their tanh; out:
  // α = static_alpha + s_α·tanh(ta), β = static_beta + s_β·tanh(tb) (s_α, s_β: one value each).
  virtual void hc_coefficients(T* alpha, T* beta, T* ta, T* tb, const T* static_alpha,
                               const T* static_beta, const T* s_alpha, const T* s_beta,
                               int64_t rows, int n) = 0;
  // From dα, dβ: dza, dzb (overwritten; pre-activation gradients) and the added gradients of
  // static_alpha [n, n+1], static_beta [n], s_α, s_β (sums over rows in a fixed order).
  virtual void hc_coefficients_backward(T* dza, T* dzb, T* dstatic_alpha, T* dstatic_beta,
                                        T* ds_alpha, T* ds_beta, const T* dalpha, const T* dbeta,
                                        const T* ta, const T* tb, const T* s_alpha, const T* s_beta,
                                        int64_t rows, int n) = 0;

  // --- mHC coefficients (§8) ------------------------------------------------------------------
  // z [rows, n²+2n] = v·φ: pre = σ(g0·z_pre + b_pre), post = 2σ(g1·z_post + b_post),
  // res_logits = g2·z_res + b_res (gates: 3 values, bias: n²+2n).
  virtual void mhc_coefficients(T* pre, T* post, T* res_logits, const T* z, const T* gates,
                                const T* bias, int64_t rows, int n) = 0;
  // dz overwritten; dgates, dbias added (sums over rows in a fixed order).
  virtual void mhc_coefficients_backward(T* dz, T* dgates, T* dbias, const T* dpre, const T* dpost,
                                         const T* dres_logits, const T* z, const T* pre,
                                         const T* post, const T* gates, int64_t rows, int n) = 0;
  // Sinkhorn normalisation of each token's n×n matrix (§8); dlogits overwritten.
  virtual void sinkhorn_forward(T* out, const T* logits, const SinkhornShape& s) = 0;
  virtual void sinkhorn_backward(T* dlogits, const T* dout, const T* logits,
                                 const SinkhornShape& s) = 0;

  // --- AttnRes depth softmax (§9, §10) --------------------------------------------------------
  // sources: a host array of `s.sources` pointers, each [rows, d] in the backend's space.
  // h = Σ_i softmax_i(query·RMSNorm(v_i; key_gain))·v_i; weights, rstd [rows, sources] kept.
  virtual void depth_softmax_forward(T* h, T* weights, T* rstd, const T* const* sources,
                                     const T* query, const T* key_gain, const DepthMixShape& s) = 0;
  // dsources (host array of pointers) added; dquery, dkey_gain added.
  virtual void depth_softmax_backward(T* const* dsources, T* dquery, T* dkey_gain, const T* dh,
                                      const T* const* sources, const T* weights, const T* rstd,
                                      const T* query, const T* key_gain,
                                      const DepthMixShape& s) = 0;
};

}  // namespace db
