// StorageOps for a narrow S on any backend: each op widens its S inputs to T, runs the Ops<T>
// op and rounds its S outputs. A result is then what T arithmetic gives on the stored values,
// rounded once where it is stored: the CPU's bf16 storage, and the GPU's fallback for the ops
// it has no bf16 kernel for. A backend supplies only the two conversions. Outputs that an op
// adds to (accumulate_dx, MoDA's depth gradients, axpby's y) are widened first, so the sum is
// rounded once, as a GPU kernel that reads and writes bf16 rounds it.
#pragma once
#include <array>

#include "core/buffer.hpp"
#include "ops/ops.hpp"
#include "ops/storage_ops.hpp"

namespace db {

template <class T, class S>
class WideningStorageOps : public StorageOps<T, S> {
 public:
  explicit WideningStorageOps(Ops<T>& ops) : ops_(ops) {}

  void linear_forward(S* y, const S* x, const S* W, int64_t rows, int in, int out) override {
    T* y_wide = scratch(0, rows * out);
    ops_.linear_forward(y_wide, wide(1, x, rows * in), wide(2, W, int64_t(out) * in), rows, in,
                        out);
    this->narrow(y, y_wide, rows * out);
  }
  void linear_forward_wide(T* y, const S* x, const S* W, int64_t rows, int in, int out) override {
    ops_.linear_forward(y, wide(1, x, rows * in), wide(2, W, int64_t(out) * in), rows, in, out);
  }
  void linear_backward(S* dx, T* dW, const S* dy, const S* x, const S* W, int64_t rows, int in,
                       int out, bool accumulate_dx) override {
    T* dx_wide = output(0, dx, rows * in, accumulate_dx);
    linear_backward_wide(dx_wide, dW, dy, x, W, rows, in, out, accumulate_dx);
    this->narrow(dx, dx_wide, rows * in);
  }
  void linear_backward_wide(T* dx, T* dW, const S* dy, const S* x, const S* W, int64_t rows, int in,
                            int out, bool accumulate_dx) override {
    ops_.linear_backward(dx, dW, wide(1, dy, rows * out), wide(2, x, rows * in),
                         wide(3, W, int64_t(out) * in), rows, in, out, accumulate_dx);
  }

  void rmsnorm_forward(S* y, T* rstd, const S* x, const T* gain, int64_t rows, int width,
                       double eps) override {
    const int64_t n = rows * width;
    T* y_wide = scratch(0, n);
    ops_.rmsnorm_forward(y_wide, rstd, wide(1, x, n), gain, rows, width, eps);
    this->narrow(y, y_wide, n);
  }
  void rmsnorm_backward(S* dx, T* dgain, const S* dy, const S* x, const T* gain, const T* rstd,
                        int64_t rows, int width, bool accumulate_dx) override {
    const int64_t n = rows * width;
    T* dx_wide = output(0, dx, n, accumulate_dx);
    ops_.rmsnorm_backward(dx_wide, dgain, wide(1, dy, n), wide(2, x, n), gain, rstd, rows, width,
                          accumulate_dx);
    this->narrow(dx, dx_wide, n);
  }
  void rope(S* x, int64_t batch, int seq_len, int heads, int head_dim, double theta,
            bool inverse) override {
    const int64_t n = batch * seq_len * heads * head_dim;
    T* x_wide = output(0, x, n, true);
    ops_.rope(x_wide, batch, seq_len, heads, head_dim, theta, inverse);
    this->narrow(x, x_wide, n);
  }

  void attention_forward(S* o, T* lse, const S* q, const S* k, const S* v,
                         const AttentionShape& s) override {
    const int64_t rows = s.batch * s.seq_len, nq = rows * s.heads * s.head_dim,
                  nkv = rows * s.kv_heads * s.head_dim;
    T* o_wide = scratch(0, nq);
    ops_.attention_forward(o_wide, lse, wide(1, q, nq), wide(2, k, nkv), wide(3, v, nkv), s);
    this->narrow(o, o_wide, nq);
  }
  void attention_backward(S* dq, S* dk, S* dv, const S* d_o, const S* o, const T* lse, const S* q,
                          const S* k, const S* v, const AttentionShape& s) override {
    const int64_t rows = s.batch * s.seq_len, nq = rows * s.heads * s.head_dim,
                  nkv = rows * s.kv_heads * s.head_dim;
    T *dq_wide = scratch(0, nq), *dk_wide = scratch(1, nkv), *dv_wide = scratch(2, nkv);
    ops_.attention_backward(dq_wide, dk_wide, dv_wide, wide(3, d_o, nq), wide(4, o, nq), lse,
                            wide(5, q, nq), wide(6, k, nkv), wide(7, v, nkv), s);
    this->narrow(dq, dq_wide, nq);
    this->narrow(dk, dk_wide, nkv);
    this->narrow(dv, dv_wide, nkv);
  }
  void moda_attention_forward(S* o, T* lse, const S* q, const S* k, const S* v, const S* depth_k,
                              const S* depth_v, const ModaShape& s) override {
    const int64_t rows = s.batch * s.seq_len, nq = rows * s.heads * s.head_dim,
                  nkv = rows * s.kv_heads * s.head_dim, ndepth = nkv * s.depth_stride;
    T* o_wide = scratch(0, nq);
    ops_.moda_attention_forward(o_wide, lse, wide(1, q, nq), wide(2, k, nkv), wide(3, v, nkv),
                                wide(4, depth_k, ndepth), wide(5, depth_v, ndepth), s);
    this->narrow(o, o_wide, nq);
  }
  void moda_attention_backward(S* dq, S* dk, S* dv, S* d_depth_k, S* d_depth_v, const S* d_o,
                               const S* o, const T* lse, const S* q, const S* k, const S* v,
                               const S* depth_k, const S* depth_v, const ModaShape& s) override {
    const int64_t rows = s.batch * s.seq_len, nq = rows * s.heads * s.head_dim,
                  nkv = rows * s.kv_heads * s.head_dim, ndepth = nkv * s.depth_stride;
    T *dq_wide = scratch(0, nq), *dk_wide = scratch(1, nkv), *dv_wide = scratch(2, nkv);
    T* ddk_wide = output(3, d_depth_k, ndepth, true);
    T* ddv_wide = output(4, d_depth_v, ndepth, true);
    ops_.moda_attention_backward(dq_wide, dk_wide, dv_wide, ddk_wide, ddv_wide, wide(5, d_o, nq),
                                 wide(6, o, nq), lse, wide(7, q, nq), wide(8, k, nkv),
                                 wide(9, v, nkv), wide(10, depth_k, ndepth),
                                 wide(11, depth_v, ndepth), s);
    this->narrow(dq, dq_wide, nq);
    this->narrow(dk, dk_wide, nkv);
    this->narrow(dv, dv_wide, nkv);
    this->narrow(d_depth_k, ddk_wide, ndepth);
    this->narrow(d_depth_v, ddv_wide, ndepth);
  }

  void swiglu_forward(S* h, const S* a, const S* b, int64_t count) override {
    T* h_wide = scratch(0, count);
    ops_.swiglu_forward(h_wide, wide(1, a, count), wide(2, b, count), count);
    this->narrow(h, h_wide, count);
  }
  void swiglu_backward(S* da, S* db, const S* dh, const S* a, const S* b, int64_t count) override {
    T *da_wide = scratch(0, count), *db_wide = scratch(1, count);
    ops_.swiglu_backward(da_wide, db_wide, wide(2, dh, count), wide(3, a, count), wide(4, b, count),
                         count);
    this->narrow(da, da_wide, count);
    this->narrow(db, db_wide, count);
  }

  // Widening and rounding back is exact, so these move the stored bits unchanged.
  void copy(S* dst, const S* src, int64_t count) override {
    this->narrow(dst, wide(0, src, count), count);
  }
  void axpby(S* y, T a, const S* x, T b, int64_t count) override {
    T* y_wide = output(0, y, count, true);
    ops_.axpby(y_wide, a, wide(1, x, count), b, count);
    this->narrow(y, y_wide, count);
  }
  void copy_rows(S* dst, int64_t dst_stride, const S* src, int64_t src_stride, int64_t rows,
                 int width) override {
    if (rows <= 0) return;
    const int64_t dst_count = (rows - 1) * dst_stride + width;
    T* dst_wide = output(0, dst, dst_count, true);  // keeps what lies between the rows
    ops_.copy_rows(dst_wide, dst_stride, wide(1, src, (rows - 1) * src_stride + width), src_stride,
                   rows, width);
    this->narrow(dst, dst_wide, dst_count);
  }

 protected:
  Ops<T>& ops() { return ops_; }

 private:
  // Scratch slot i, sized for count values of T.
  T* scratch(int i, int64_t count) {
    scratch_[i].resize(count);
    return scratch_[i].data();
  }
  // src widened into scratch slot i.
  const T* wide(int i, const S* src, int64_t count) {
    T* dst = scratch(i, count);
    this->widen(dst, src, count);
    return dst;
  }
  // The T buffer an op writes into for the S output out: slot i, holding out's values when the
  // op adds to them.
  T* output(int i, const S* out, int64_t count, bool keeps_values) {
    T* dst = scratch(i, count);
    if (keeps_values) this->widen(dst, out, count);
    return dst;
  }

  Ops<T>& ops_;
  std::array<Buffer<T>, 12> scratch_;
};

}  // namespace db
