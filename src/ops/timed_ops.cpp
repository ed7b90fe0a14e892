#include "ops/timed_ops.hpp"

#include <utility>

#include "ops/timed_storage_ops.hpp"

namespace db {
namespace {

template <class T>
class TimedOps final : public Ops<T> {
 public:
  TimedOps(std::unique_ptr<Ops<T>> inner, SectionTimer& timer)
      : inner_(std::move(inner)), timer_(timer) {}

  MemorySpace space() const override { return inner_->space(); }
  const char* name() const override { return inner_->name(); }
  std::string attention_paths() const override { return inner_->attention_paths(); }

  void gemm(bool trans_a, bool trans_b, int M, int N, int K, T alpha, const T* A, int lda,
            const T* B, int ldb, T beta, T* C, int ldc) override {
    timed("gemm",
          [&] { inner_->gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); });
  }
  void linear_forward(T* y, const T* x, const T* W, int64_t rows, int in, int out) override {
    timed("linear_forward", [&] { inner_->linear_forward(y, x, W, rows, in, out); });
  }
  void linear_backward(T* dx, T* dW, const T* dy, const T* x, const T* W, int64_t rows, int in,
                       int out, bool accumulate_dx) override {
    timed("linear_backward",
          [&] { inner_->linear_backward(dx, dW, dy, x, W, rows, in, out, accumulate_dx); });
  }
  void rmsnorm_forward(T* y, T* rstd, const T* x, const T* gain, int64_t rows, int width,
                       double eps) override {
    timed("rmsnorm_forward", [&] { inner_->rmsnorm_forward(y, rstd, x, gain, rows, width, eps); });
  }
  void rmsnorm_backward(T* dx, T* dgain, const T* dy, const T* x, const T* gain, const T* rstd,
                        int64_t rows, int width, bool accumulate_dx) override {
    timed("rmsnorm_backward", [&] {
      inner_->rmsnorm_backward(dx, dgain, dy, x, gain, rstd, rows, width, accumulate_dx);
    });
  }
  void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gain, int64_t rows, int width,
                         double eps) override {
    timed("layernorm_forward",
          [&] { inner_->layernorm_forward(y, mean, rstd, x, gain, rows, width, eps); });
  }
  void layernorm_backward(T* dx, T* dgain, const T* dy, const T* x, const T* gain, const T* mean,
                          const T* rstd, int64_t rows, int width, bool accumulate_dx) override {
    timed("layernorm_backward", [&] {
      inner_->layernorm_backward(dx, dgain, dy, x, gain, mean, rstd, rows, width, accumulate_dx);
    });
  }
  void add_rmsnorm_forward(T* sum, T* y, T* rstd, const T* x, const T* branch, T alpha,
                           const T* gain, int64_t rows, int width, double eps) override {
    timed("add_rmsnorm_forward", [&] {
      inner_->add_rmsnorm_forward(sum, y, rstd, x, branch, alpha, gain, rows, width, eps);
    });
  }
  void add_layernorm_forward(T* sum, T* y, T* mean, T* rstd, const T* x, const T* branch, T alpha,
                             const T* gain, int64_t rows, int width, double eps) override {
    timed("add_layernorm_forward", [&] {
      inner_->add_layernorm_forward(sum, y, mean, rstd, x, branch, alpha, gain, rows, width, eps);
    });
  }
  void norm_add_rmsnorm_forward(T* sum, T* y, T* rstd, T* branch_rstd, const T* x,
                                const T* branch, const T* branch_gain, const T* gain, int64_t rows,
                                int width, double eps) override {
    timed("norm_add_rmsnorm_forward", [&] {
      inner_->norm_add_rmsnorm_forward(sum, y, rstd, branch_rstd, x, branch, branch_gain, gain,
                                       rows, width, eps);
    });
  }
  void rope(T* x, int64_t batch, int seq_len, int heads, int head_dim, double theta,
            bool inverse) override {
    timed(inverse ? "rope_backward" : "rope_forward",
          [&] { inner_->rope(x, batch, seq_len, heads, head_dim, theta, inverse); });
  }
  void attention_forward(T* o, T* lse, const T* q, const T* k, const T* v,
                         const AttentionShape& s) override {
    timed("attention_forward", [&] { inner_->attention_forward(o, lse, q, k, v, s); });
  }
  void attention_backward(T* dq, T* dk, T* dv, const T* d_o, const T* o, const T* lse, const T* q,
                          const T* k, const T* v, const AttentionShape& s) override {
    timed("attention_backward",
          [&] { inner_->attention_backward(dq, dk, dv, d_o, o, lse, q, k, v, s); });
  }
  void moda_attention_forward(T* o, T* lse, const T* q, const T* k, const T* v, const T* depth_k,
                              const T* depth_v, const ModaShape& s) override {
    timed("moda_attention_forward",
          [&] { inner_->moda_attention_forward(o, lse, q, k, v, depth_k, depth_v, s); });
  }
  void moda_attention_backward(T* dq, T* dk, T* dv, T* d_depth_k, T* d_depth_v, const T* d_o,
                               const T* o, const T* lse, const T* q, const T* k, const T* v,
                               const T* depth_k, const T* depth_v, const ModaShape& s) override {
    timed("moda_attention_backward", [&] {
      inner_->moda_attention_backward(dq, dk, dv, d_depth_k, d_depth_v, d_o, o, lse, q, k, v,
                                      depth_k, depth_v, s);
    });
  }
  void swiglu_forward(T* h, const T* a, const T* b, int64_t count) override {
    timed("swiglu_forward", [&] { inner_->swiglu_forward(h, a, b, count); });
  }
  void swiglu_backward(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count) override {
    timed("swiglu_backward", [&] { inner_->swiglu_backward(da, db, dh, a, b, count); });
  }
  void embedding_forward(T* x, const int32_t* tokens, const T* table, int64_t rows,
                         int d) override {
    timed("embedding_forward", [&] { inner_->embedding_forward(x, tokens, table, rows, d); });
  }
  void embedding_backward(T* dtable, const int32_t* tokens, const T* dx, int64_t rows,
                          int d) override {
    timed("embedding_backward", [&] { inner_->embedding_backward(dtable, tokens, dx, rows, d); });
  }
  void cross_entropy(double* loss_sum, const T* h, const T* W, const int32_t* targets,
                     const HeadShape& s, T* dh, T* dW, double grad_scale) override {
    timed(dh ? "lm_head_cross_entropy_fwd_bwd" : "lm_head_cross_entropy_fwd",
          [&] { inner_->cross_entropy(loss_sum, h, W, targets, s, dh, dW, grad_scale); });
  }
  void cross_entropy_rows(double* losses, const T* h, const T* W, const int32_t* targets,
                          const HeadShape& s) override {
    timed("cross_entropy_rows", [&] { inner_->cross_entropy_rows(losses, h, W, targets, s); });
  }
  void logits(T* out, const T* h, const T* W, const HeadShape& s) override {
    timed("logits", [&] { inner_->logits(out, h, W, s); });
  }
  void copy(T* dst, const T* src, int64_t count) override {
    timed("copy", [&] { inner_->copy(dst, src, count); });
  }
  void axpby(T* y, T a, const T* x, T b, int64_t count) override {
    timed("axpby", [&] { inner_->axpby(y, a, x, b, count); });
  }
  void copy_rows(T* dst, int64_t dst_stride, const T* src, int64_t src_stride, int64_t rows,
                 int width) override {
    timed("copy_rows", [&] { inner_->copy_rows(dst, dst_stride, src, src_stride, rows, width); });
  }
  // Untimed: a copy before the micro-batch's compute, not an op of it ("other").
  void upload_tokens(int32_t* dst, const int32_t* host, int64_t count) override {
    inner_->upload_tokens(dst, host, count);
  }
  // The sublayer cores' ops on bf16 storage (train.activation_dtype), timed under the same
  // section names as the model type's.
  StorageOps<T, bfloat16>* bf16_storage() override {
    if (!timed_bf16_)
      if (StorageOps<T, bfloat16>* inner = inner_->bf16_storage())
        timed_bf16_ = std::make_unique<TimedStorageOps<T, bfloat16>>(*inner, timer_);
    return timed_bf16_.get();
  }
  // A replayed record would skip the timed calls: a timed model always runs body eagerly.
  void run_captured(const std::string&, const std::function<void()>& body) override { body(); }
  std::string capture_status() const override { return "off (ops timed)"; }

 private:
  template <class Call>
  void timed(const char* section, Call&& call) {
    time_section(timer_, section, std::forward<Call>(call));
  }

  std::unique_ptr<Ops<T>> inner_;
  SectionTimer& timer_;
  std::unique_ptr<StorageOps<T, bfloat16>> timed_bf16_;  // wraps inner_->bf16_storage()
};

}  // namespace

template <class T>
std::unique_ptr<Ops<T>> make_timed_ops(std::unique_ptr<Ops<T>> inner, SectionTimer& timer) {
  return std::make_unique<TimedOps<T>>(std::move(inner), timer);
}

template std::unique_ptr<Ops<float>> make_timed_ops(std::unique_ptr<Ops<float>>, SectionTimer&);
template std::unique_ptr<Ops<double>> make_timed_ops(std::unique_ptr<Ops<double>>, SectionTimer&);

}  // namespace db
