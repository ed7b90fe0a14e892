// StorageOps that time every call of another StorageOps object in a SectionTimer: the sublayer
// cores' ops on bf16 storage (train.activation_dtype = bf16) in `depthbench bench --breakdown`.
// TimedOps::bf16_storage() (ops/timed_ops.cpp) hands them out, so a timed model stores what an
// untimed one stores. Each op is timed under the name of the model type's op it stands for
// (linear_forward, attention_backward, ...), the "_wide" products under the plain product's
// name (only the type of their output differs); the conversions are bf16_narrow and bf16_widen.
// The fused QK-norm + RoPE is timed as qk_norm_rope_forward / _backward, RoPE on q and k in one
// call as rope_forward / rope_backward. Every method is forwarded, the StorageOps defaults too,
// so that a backend's fused form is the one timed.
#pragma once
#include <cstdint>

#include "ops/section_timer.hpp"
#include "ops/storage_ops.hpp"

namespace db {

template <class T, class S>
class TimedStorageOps final : public StorageOps<T, S> {
 public:
  // Both must outlive this object.
  TimedStorageOps(StorageOps<T, S>& inner, SectionTimer& timer) : inner_(inner), timer_(timer) {}

  void narrow(S* dst, const T* src, int64_t count) override {
    time_section(timer_, "bf16_narrow", [&] { inner_.narrow(dst, src, count); });
  }
  void widen(T* dst, const S* src, int64_t count) override {
    time_section(timer_, "bf16_widen", [&] { inner_.widen(dst, src, count); });
  }
  void linear_forward(S* y, const S* x, const S* W, int64_t rows, int in, int out) override {
    time_section(timer_, "linear_forward", [&] { inner_.linear_forward(y, x, W, rows, in, out); });
  }
  void linear_forward_wide(T* y, const S* x, const S* W, int64_t rows, int in, int out) override {
    time_section(timer_, "linear_forward",
                 [&] { inner_.linear_forward_wide(y, x, W, rows, in, out); });
  }
  void linear_backward(S* dx, T* dW, const S* dy, const S* x, const S* W, int64_t rows, int in,
                       int out, bool accumulate_dx) override {
    time_section(timer_, "linear_backward",
                 [&] { inner_.linear_backward(dx, dW, dy, x, W, rows, in, out, accumulate_dx); });
  }
  void linear_backward_wide(T* dx, T* dW, const S* dy, const S* x, const S* W, int64_t rows, int in,
                            int out, bool accumulate_dx) override {
    time_section(timer_, "linear_backward", [&] {
      inner_.linear_backward_wide(dx, dW, dy, x, W, rows, in, out, accumulate_dx);
    });
  }
  void rmsnorm_forward(S* y, T* rstd, const S* x, const T* gain, int64_t rows, int width,
                       double eps) override {
    time_section(timer_, "rmsnorm_forward",
                 [&] { inner_.rmsnorm_forward(y, rstd, x, gain, rows, width, eps); });
  }
  void rmsnorm_backward(S* dx, T* dgain, const S* dy, const S* x, const T* gain, const T* rstd,
                        int64_t rows, int width, bool accumulate_dx) override {
    time_section(timer_, "rmsnorm_backward", [&] {
      inner_.rmsnorm_backward(dx, dgain, dy, x, gain, rstd, rows, width, accumulate_dx);
    });
  }
  void rope(S* x, int64_t batch, int seq_len, int heads, int head_dim, double theta,
            bool inverse) override {
    time_section(timer_, inverse ? "rope_backward" : "rope_forward",
                 [&] { inner_.rope(x, batch, seq_len, heads, head_dim, theta, inverse); });
  }
  void rope_qk(S* q, int heads, S* k, int kv_heads, int64_t batch, int seq_len, int head_dim,
               double theta, bool inverse) override {
    time_section(timer_, inverse ? "rope_backward" : "rope_forward", [&] {
      inner_.rope_qk(q, heads, k, kv_heads, batch, seq_len, head_dim, theta, inverse);
    });
  }
  void qk_norm_rope_forward(S* y, T* rstd, S* y_unrotated, const S* x, const T* gain, int64_t batch,
                            int seq_len, int heads, int head_dim, double eps,
                            double theta) override {
    time_section(timer_, "qk_norm_rope_forward", [&] {
      inner_.qk_norm_rope_forward(y, rstd, y_unrotated, x, gain, batch, seq_len, heads, head_dim,
                                  eps, theta);
    });
  }
  void qk_norm_rope_backward(S* dx, T* dgain, S* dy, const S* dy_unrotated, const S* x,
                             const T* gain, const T* rstd, int64_t batch, int seq_len, int heads,
                             int head_dim, double theta) override {
    time_section(timer_, "qk_norm_rope_backward", [&] {
      inner_.qk_norm_rope_backward(dx, dgain, dy, dy_unrotated, x, gain, rstd, batch, seq_len,
                                   heads, head_dim, theta);
    });
  }
  void attention_forward(S* o, T* lse, const S* q, const S* k, const S* v,
                         const AttentionShape& s) override {
    time_section(timer_, "attention_forward",
                 [&] { inner_.attention_forward(o, lse, q, k, v, s); });
  }
  void attention_backward(S* dq, S* dk, S* dv, const S* d_o, const S* o, const T* lse, const S* q,
                          const S* k, const S* v, const AttentionShape& s) override {
    time_section(timer_, "attention_backward",
                 [&] { inner_.attention_backward(dq, dk, dv, d_o, o, lse, q, k, v, s); });
  }
  void moda_attention_forward(S* o, T* lse, const S* q, const S* k, const S* v, const S* depth_k,
                              const S* depth_v, const ModaShape& s) override {
    time_section(timer_, "moda_attention_forward",
                 [&] { inner_.moda_attention_forward(o, lse, q, k, v, depth_k, depth_v, s); });
  }
  void moda_attention_backward(S* dq, S* dk, S* dv, S* d_depth_k, S* d_depth_v, const S* d_o,
                               const S* o, const T* lse, const S* q, const S* k, const S* v,
                               const S* depth_k, const S* depth_v, const ModaShape& s) override {
    time_section(timer_, "moda_attention_backward", [&] {
      inner_.moda_attention_backward(dq, dk, dv, d_depth_k, d_depth_v, d_o, o, lse, q, k, v,
                                     depth_k, depth_v, s);
    });
  }
  void swiglu_forward(S* h, const S* a, const S* b, int64_t count) override {
    time_section(timer_, "swiglu_forward", [&] { inner_.swiglu_forward(h, a, b, count); });
  }
  void swiglu_backward(S* da, S* db, const S* dh, const S* a, const S* b, int64_t count) override {
    time_section(timer_, "swiglu_backward",
                 [&] { inner_.swiglu_backward(da, db, dh, a, b, count); });
  }
  void copy(S* dst, const S* src, int64_t count) override {
    time_section(timer_, "copy", [&] { inner_.copy(dst, src, count); });
  }
  void axpby(S* y, T a, const S* x, T b, int64_t count) override {
    time_section(timer_, "axpby", [&] { inner_.axpby(y, a, x, b, count); });
  }
  void copy_rows(S* dst, int64_t dst_stride, const S* src, int64_t src_stride, int64_t rows,
                 int width) override {
    time_section(timer_, "copy_rows",
                 [&] { inner_.copy_rows(dst, dst_stride, src, src_stride, rows, width); });
  }

 private:
  StorageOps<T, S>& inner_;
  SectionTimer& timer_;
};

}  // namespace db
