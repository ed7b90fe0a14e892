// StorageOps with S = T: the activations stored in the model type, every call the Ops<T> call
// of the same name. The sublayer cores run through it by default (train.activation_dtype =
// fp32), which gives exactly the calls, and the bits, of the model before storage types.
#pragma once
#include "ops/ops.hpp"
#include "ops/storage_ops.hpp"

namespace db {

template <class T>
class SameTypeStorageOps final : public StorageOps<T, T> {
 public:
  explicit SameTypeStorageOps(Ops<T>& ops) : ops_(ops) {}

  void narrow(T* dst, const T* src, int64_t count) override { ops_.copy(dst, src, count); }
  void widen(T* dst, const T* src, int64_t count) override { ops_.copy(dst, src, count); }
  void linear_forward(T* y, const T* x, const T* W, int64_t rows, int in, int out) override {
    ops_.linear_forward(y, x, W, rows, in, out);
  }
  void linear_forward_wide(T* y, const T* x, const T* W, int64_t rows, int in, int out) override {
    ops_.linear_forward(y, x, W, rows, in, out);
  }
  void linear_backward(T* dx, T* dW, const T* dy, const T* x, const T* W, int64_t rows, int in,
                       int out, bool accumulate_dx) override {
    ops_.linear_backward(dx, dW, dy, x, W, rows, in, out, accumulate_dx);
  }
  void linear_backward_wide(T* dx, T* dW, const T* dy, const T* x, const T* W, int64_t rows, int in,
                            int out, bool accumulate_dx) override {
    ops_.linear_backward(dx, dW, dy, x, W, rows, in, out, accumulate_dx);
  }
  void rmsnorm_forward(T* y, T* rstd, const T* x, const T* gain, int64_t rows, int width,
                       double eps) override {
    ops_.rmsnorm_forward(y, rstd, x, gain, rows, width, eps);
  }
  void rmsnorm_backward(T* dx, T* dgain, const T* dy, const T* x, const T* gain, const T* rstd,
                        int64_t rows, int width, bool accumulate_dx) override {
    ops_.rmsnorm_backward(dx, dgain, dy, x, gain, rstd, rows, width, accumulate_dx);
  }
  void rope(T* x, int64_t batch, int seq_len, int heads, int head_dim, double theta,
            bool inverse) override {
    ops_.rope(x, batch, seq_len, heads, head_dim, theta, inverse);
  }
  void attention_forward(T* o, T* lse, const T* q, const T* k, const T* v,
                         const AttentionShape& s) override {
    ops_.attention_forward(o, lse, q, k, v, s);
  }
  void attention_backward(T* dq, T* dk, T* dv, const T* d_o, const T* o, const T* lse, const T* q,
                          const T* k, const T* v, const AttentionShape& s) override {
    ops_.attention_backward(dq, dk, dv, d_o, o, lse, q, k, v, s);
  }
  void moda_attention_forward(T* o, T* lse, const T* q, const T* k, const T* v, const T* depth_k,
                              const T* depth_v, const ModaShape& s) override {
    ops_.moda_attention_forward(o, lse, q, k, v, depth_k, depth_v, s);
  }
  void moda_attention_backward(T* dq, T* dk, T* dv, T* d_depth_k, T* d_depth_v, const T* d_o,
                               const T* o, const T* lse, const T* q, const T* k, const T* v,
                               const T* depth_k, const T* depth_v, const ModaShape& s) override {
    ops_.moda_attention_backward(dq, dk, dv, d_depth_k, d_depth_v, d_o, o, lse, q, k, v, depth_k,
                                 depth_v, s);
  }
  void swiglu_forward(T* h, const T* a, const T* b, int64_t count) override {
    ops_.swiglu_forward(h, a, b, count);
  }
  void swiglu_backward(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count) override {
    ops_.swiglu_backward(da, db, dh, a, b, count);
  }
  void copy(T* dst, const T* src, int64_t count) override { ops_.copy(dst, src, count); }
  void axpby(T* y, T a, const T* x, T b, int64_t count) override { ops_.axpby(y, a, x, b, count); }
  void copy_rows(T* dst, int64_t dst_stride, const T* src, int64_t src_stride, int64_t rows,
                 int width) override {
    ops_.copy_rows(dst, dst_stride, src, src_stride, rows, width);
  }

 private:
  Ops<T>& ops_;
};

}  // namespace db
