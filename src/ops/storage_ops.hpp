// The ops of the sublayer cores (model/sublayer_cores.hpp) on activations stored as S, with
// weights' gradients, norm statistics and attention's log-sum-exp in the model type T.
// S = T is the plain model (every call goes to Ops<T>, storage_ops_same_type.hpp); S = bf16 is
// train.activation_dtype = bf16: the cores keep q, k, v, o, the FFN's a, b, h and all their
// gradients in bf16, and every op computes in T from bf16 inputs and rounds what it stores
// (doc/performance.md "bf16 activation storage"). Every backend runs it: the CPU widens the
// inputs, runs its T op and rounds the outputs (storage_ops_widening.hpp); the GPU reads bf16
// natively where it has a kernel for it.
//
// Weights (W) come as S: the cores keep an S copy of each matrix they read. Parameter
// gradients (dW, dgain) are T and always added. "_wide" methods write or read a T tensor where
// a core meets the design's T streams: its output y = o·W_oᵀ or h·W_2ᵀ and its input gradient dx.
#pragma once
#include <cstdint>

#include "ops/shapes.hpp"

namespace db {

template <class T, class S>
class StorageOps {
 public:
  virtual ~StorageOps() = default;

  // dst = src rounded to S; dst = src widened to T.
  virtual void narrow(S* dst, const T* src, int64_t count) = 0;
  virtual void widen(T* dst, const S* src, int64_t count) = 0;

  // y = x·Wᵀ (W [out, in]), into S or into T.
  virtual void linear_forward(S* y, const S* x, const S* W, int64_t rows, int in, int out) = 0;
  virtual void linear_forward_wide(T* y, const S* x, const S* W, int64_t rows, int in, int out) = 0;
  // dx = dy·W (overwritten, or added when accumulate_dx), dW += dyᵀ·x; dx as S or as T.
  virtual void linear_backward(S* dx, T* dW, const S* dy, const S* x, const S* W, int64_t rows,
                               int in, int out, bool accumulate_dx) = 0;
  virtual void linear_backward_wide(T* dx, T* dW, const S* dy, const S* x, const S* W, int64_t rows,
                                    int in, int out, bool accumulate_dx) = 0;

  // RMSNorm over rows (QK-norm), as Ops::rmsnorm_*.
  virtual void rmsnorm_forward(S* y, T* rstd, const S* x, const T* gain, int64_t rows, int width,
                               double eps) = 0;
  virtual void rmsnorm_backward(S* dx, T* dgain, const S* dy, const S* x, const T* gain,
                                const T* rstd, int64_t rows, int width, bool accumulate_dx) = 0;
  virtual void rope(S* x, int64_t batch, int seq_len, int heads, int head_dim, double theta,
                    bool inverse) = 0;

  // The attention core's QK-norm and RoPE in fewer passes (model/sublayer_cores.cpp). Each is by
  // default the calls it stands for; a backend that fuses them must give those calls' bits
  // (tests/ops/storage_ops_test.cpp, tests/gpu/cuda_packed_kernels_test.cpp).
  //
  // q [batch·seq_len, heads, hd] and k [.., kv_heads, hd] rotated, as two rope calls.
  virtual void rope_qk(S* q, int heads, S* k, int kv_heads, int64_t batch, int seq_len,
                       int head_dim, double theta, bool inverse) {
    rope(q, batch, seq_len, heads, head_dim, theta, inverse);
    rope(k, batch, seq_len, kv_heads, head_dim, theta, inverse);
  }
  // y = rope(rmsnorm(x)) over rows of head_dim, rstd as rmsnorm_forward's; y_unrotated
  // (optional) receives rmsnorm(x).
  virtual void qk_norm_rope_forward(S* y, T* rstd, S* y_unrotated, const S* x, const T* gain,
                                    int64_t batch, int seq_len, int heads, int head_dim, double eps,
                                    double theta) {
    const int64_t rows = batch * seq_len * heads;
    rmsnorm_forward(y, rstd, x, gain, rows, head_dim, eps);
    if (y_unrotated) copy(y_unrotated, y, rows * head_dim);
    rope(y, batch, seq_len, heads, head_dim, theta, false);
  }
  // The backward of qk_norm_rope_forward with a further gradient dy_unrotated (optional) of its
  // y_unrotated: dx overwritten, dgain added. dy is consumed (used as scratch).
  virtual void qk_norm_rope_backward(S* dx, T* dgain, S* dy, const S* dy_unrotated, const S* x,
                                     const T* gain, const T* rstd, int64_t batch, int seq_len,
                                     int heads, int head_dim, double theta) {
    const int64_t rows = batch * seq_len * heads;
    rope(dy, batch, seq_len, heads, head_dim, theta, true);
    if (dy_unrotated) axpby(dy, T(1), dy_unrotated, T(1), rows * head_dim);
    rmsnorm_backward(dx, dgain, dy, x, gain, rstd, rows, head_dim, false);
  }

  // Attention and MoDA attention as Ops::attention_* and Ops::moda_attention_*.
  virtual void attention_forward(S* o, T* lse, const S* q, const S* k, const S* v,
                                 const AttentionShape& s) = 0;
  virtual void attention_backward(S* dq, S* dk, S* dv, const S* d_o, const S* o, const T* lse,
                                  const S* q, const S* k, const S* v, const AttentionShape& s) = 0;
  virtual void moda_attention_forward(S* o, T* lse, const S* q, const S* k, const S* v,
                                      const S* depth_k, const S* depth_v, const ModaShape& s) = 0;
  virtual void moda_attention_backward(S* dq, S* dk, S* dv, S* d_depth_k, S* d_depth_v,
                                       const S* d_o, const S* o, const T* lse, const S* q,
                                       const S* k, const S* v, const S* depth_k, const S* depth_v,
                                       const ModaShape& s) = 0;

  virtual void swiglu_forward(S* h, const S* a, const S* b, int64_t count) = 0;
  virtual void swiglu_backward(S* da, S* db, const S* dh, const S* a, const S* b,
                               int64_t count) = 0;

  // Element-wise, as Ops::copy, Ops::axpby (y = b·y + a·x) and Ops::copy_rows.
  virtual void copy(S* dst, const S* src, int64_t count) = 0;
  virtual void axpby(S* y, T a, const S* x, T b, int64_t count) = 0;
  virtual void copy_rows(S* dst, int64_t dst_stride, const S* src, int64_t src_stride, int64_t rows,
                         int width) = 0;
};

}  // namespace db
