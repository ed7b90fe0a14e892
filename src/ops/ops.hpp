// The ops interface: everything the model code (src/model) computes goes through one of these
// calls, and a backend implements them all — the CPU backend (ops/cpu/cpu_ops.*, float and
// double) and the CUDA backend (ops/cuda/cuda_ops.*, float). Every pointer is in the backend's
// memory space (space()) unless a comment says "host"; tensors are row-major, `rows` tokens
// by `width` (or d) values. "Overwritten" and "added" say whether an output is assigned or
// accumulated; parameter gradients are always added.
//
// The interface holds primitives (products, attention, norms, RoPE, embedding, LM head and
// loss, element-wise ops) and three groups that serve particular designs, each a fused or
// hand-tuned kernel on both backends: MoDA's attention over sequence and depth entries
// (moda_attention_*), the residual add fused into the next norm (add_rmsnorm_forward, used by
// every single-stream design; add_layernorm_forward, DeepNorm's LayerNorm) and Sandwich-LN's
// branch norm before that add (norm_add_rmsnorm_forward). Every other piece of a design's own
// arithmetic (HC/mHC stream mixing and coefficients, Sinkhorn, the AttnRes depth softmax, learned
// gates) is not here: it lives with the design as __host__ __device__ functors run by the
// generic launchers of ops/launch.hpp on every backend, and a new design adds nothing here.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/bfloat16.hpp"
#include "core/memory.hpp"
#include "ops/shapes.hpp"
#include "ops/storage_ops.hpp"

namespace db {

template <class T>
class Ops {
 public:
  virtual ~Ops() = default;
  virtual MemorySpace space() const = 0;
  virtual const char* name() const = 0;
  // Which kernel ran each attention shape so far, for the run file (`attention_paths`): the CUDA
  // backend's "B=8 T=2048 H=16 H_kv=8 hd=64: cudnn; moda B=...: flash (why auto fell back)",
  // "none" before the first; the CPU's one attention: "cpu".
  virtual std::string attention_paths() const = 0;

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
  // The residual add and the norm after it in one pass (doc/performance.md, "Residual add +
  // RMSNorm"): sum = alpha·x + branch (overwritten; sum may be branch itself, the add in place),
  // then y, rstd (and mean) as rmsnorm_forward (layernorm_forward) of sum. The same values as
  // that norm after the add axpby(branch, 1, x, 1) (alpha = 1) or axpby(sum, 1, branch, alpha)
  // on a copy of x in sum, bit for bit (CPU and CUDA); the sum is written once, not read back.
  virtual void add_rmsnorm_forward(T* sum, T* y, T* rstd, const T* x, const T* branch, T alpha,
                                   const T* gain, int64_t rows, int width, double eps) = 0;
  virtual void add_layernorm_forward(T* sum, T* y, T* mean, T* rstd, const T* x, const T* branch,
                                     T alpha, const T* gain, int64_t rows, int width,
                                     double eps) = 0;
  // Sandwich-LN's branch norm, the residual add and the next norm in one pass: sum = x +
  // RMSNorm(branch; branch_gain) (overwritten; branch_rstd kept), then y, rstd as
  // rmsnorm_forward of sum. The normalised branch is not written. The same bits as
  // rmsnorm_forward of branch into sum, then add_rmsnorm_forward(sum, ..., x, sum, 1, ...):
  // this default, which a backend replaces by one kernel where a pass over memory is worth it.
  virtual void norm_add_rmsnorm_forward(T* sum, T* y, T* rstd, T* branch_rstd, const T* x,
                                        const T* branch, const T* branch_gain, const T* gain,
                                        int64_t rows, int width, double eps) {
    rmsnorm_forward(sum, branch_rstd, branch, branch_gain, rows, width, eps);
    add_rmsnorm_forward(sum, y, rstd, x, sum, T(1), gain, rows, width, eps);
  }

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
  // Adds to *loss_sum (backend memory, one double) the Σ over rows with target ≥ 0 of the
  // cross-entropy of softmax(h·Wᵀ). Nothing comes back to the host: the micro-batches of a step
  // add into one device accumulator that is read once per step (doc/cuda.md, "Host overhead").
  // With dh non-null also the gradients of grad_scale·sum: dh overwritten, dW added.
  virtual void cross_entropy(double* loss_sum, const T* h, const T* W, const int32_t* targets,
                             const HeadShape& s, T* dh, T* dW, double grad_scale) = 0;
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

  // --- tokens ---------------------------------------------------------------------------------
  // Copies count token ids from host memory into dst (backend memory), in order with the work
  // enqueued before and after it and without waiting for that work: the host may overwrite
  // `host` on return. (The CUDA backend copies through its own page-locked slots.)
  virtual void upload_tokens(int32_t* dst, const int32_t* host, int64_t count) = 0;

  // --- activations stored in bf16 (train.activation_dtype, ops/storage_ops.hpp) -------------
  // The sublayer cores' ops on bf16 storage, owned by this object; null where the backend has
  // none (the CPU in double: the gradient checks store what they compute).
  virtual StorageOps<T, bfloat16>* bf16_storage() { return nullptr; }

  // --- replay of a recorded micro-batch (train.cuda_graphs, doc/cuda.md) --------------------
  // Runs body, which enqueues work on this backend (one micro-batch's forward and backward). A
  // backend may record what body enqueues under `key` and later replay the record instead of
  // calling body, so body must enqueue the same work every time for one key: same shapes and
  // scalars (put them in the key), the same buffers, no host read of a result and no host copy.
  // The default (the CPU) calls body.
  virtual void run_captured(const std::string& key, const std::function<void()>& body) {
    (void)key;
    body();
  }
  // What run_captured did, for the run file's `cuda_graphs` attribute.
  virtual std::string capture_status() const {
    return std::string("not applicable (") + name() + ")";
  }
};

}  // namespace db
