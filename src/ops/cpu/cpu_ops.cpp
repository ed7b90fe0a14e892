#include "ops/cpu/cpu_ops.hpp"

#include <algorithm>
#include <type_traits>
#include <vector>

#include "ops/cpu/attention.hpp"
#include "ops/cpu/cross_entropy.hpp"
#include "ops/cpu/embedding.hpp"
#include "ops/cpu/gemm.hpp"
#include "ops/cpu/linear.hpp"
#include "ops/cpu/moda_attention.hpp"
#include "ops/cpu/rmsnorm.hpp"
#include "ops/cpu/rope.hpp"
#include "ops/cpu/swiglu.hpp"
#include "ops/storage_ops_widening.hpp"

namespace db {
namespace {

// bf16 storage on the CPU: float arithmetic on the widened values, rounded where stored.
class CpuBf16Storage final : public WideningStorageOps<float, bfloat16> {
 public:
  using WideningStorageOps::WideningStorageOps;
  void narrow(bfloat16* dst, const float* src, int64_t count) override {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; ++i) dst[i] = to_bfloat16(src[i]);
  }
  void widen(float* dst, const bfloat16* src, int64_t count) override {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < count; ++i) dst[i] = to_float(src[i]);
  }
};

template <class T>
class CpuOps final : public Ops<T> {
 public:
  MemorySpace space() const override { return MemorySpace::host; }
  const char* name() const override { return "cpu"; }
  std::string attention_paths() const override { return "cpu"; }
  StorageOps<T, bfloat16>* bf16_storage() override {
    if constexpr (!std::is_same_v<T, float>) {
      return nullptr;
    } else {
      if (!bf16_storage_) bf16_storage_ = std::make_unique<CpuBf16Storage>(*this);
      return bf16_storage_.get();
    }
  }

  void gemm(bool ta, bool tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B,
            int ldb, T beta, T* C, int ldc) override {
    cpu::gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
  void linear_forward(T* y, const T* x, const T* W, int64_t rows, int in, int out) override {
    cpu::linear_forward(y, x, W, rows, in, out);
  }
  void linear_backward(T* dx, T* dW, const T* dy, const T* x, const T* W, int64_t rows, int in,
                       int out, bool accumulate_dx) override {
    cpu::linear_backward(dx, dW, dy, x, W, rows, in, out, accumulate_dx);
  }

  void rmsnorm_forward(T* y, T* rstd, const T* x, const T* gain, int64_t rows, int width,
                       double eps) override {
    cpu::rmsnorm_forward(y, rstd, x, gain, rows, width, eps);
  }
  void rmsnorm_backward(T* dx, T* dgain, const T* dy, const T* x, const T* gain, const T* rstd,
                        int64_t rows, int width, bool accumulate_dx) override {
    cpu::rmsnorm_backward(dx, dgain, dy, x, gain, rstd, rows, width, accumulate_dx);
  }
  void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gain, int64_t rows, int width,
                         double eps) override {
    cpu::layernorm_forward(y, mean, rstd, x, gain, rows, width, eps);
  }
  void layernorm_backward(T* dx, T* dgain, const T* dy, const T* x, const T* gain, const T* mean,
                          const T* rstd, int64_t rows, int width, bool accumulate_dx) override {
    cpu::layernorm_backward(dx, dgain, dy, x, gain, mean, rstd, rows, width, accumulate_dx);
  }
  void add_rmsnorm_forward(T* sum, T* y, T* rstd, const T* x, const T* branch, T alpha,
                           const T* gain, int64_t rows, int width, double eps) override {
    cpu::add_rmsnorm_forward(sum, y, rstd, x, branch, alpha, gain, rows, width, eps);
  }
  void add_layernorm_forward(T* sum, T* y, T* mean, T* rstd, const T* x, const T* branch, T alpha,
                             const T* gain, int64_t rows, int width, double eps) override {
    cpu::add_layernorm_forward(sum, y, mean, rstd, x, branch, alpha, gain, rows, width, eps);
  }

  void rope(T* x, int64_t batch, int seq_len, int heads, int head_dim, double theta,
            bool inverse) override {
    if (rope_.seq_len != seq_len || rope_.head_dim != head_dim || rope_theta_ != theta) {
      rope_ = cpu::RopeTable(seq_len, head_dim, theta);
      rope_theta_ = theta;
    }
    cpu::rope_apply(x, rope_, batch, seq_len, heads, inverse);
  }
  void attention_forward(T* o, T* lse, const T* q, const T* k, const T* v,
                         const AttentionShape& s) override {
    cpu::attention_forward(o, lse, q, k, v, s);
  }
  void attention_backward(T* dq, T* dk, T* dv, const T* d_o, const T* o, const T* lse, const T* q,
                          const T* k, const T* v, const AttentionShape& s) override {
    cpu::attention_backward(dq, dk, dv, d_o, o, lse, q, k, v, s);
  }
  void moda_attention_forward(T* o, T* lse, const T* q, const T* k, const T* v, const T* depth_k,
                              const T* depth_v, const ModaShape& s) override {
    cpu::moda_attention_forward(o, lse, q, k, v, depth_k, depth_v, s);
  }
  void moda_attention_backward(T* dq, T* dk, T* dv, T* d_depth_k, T* d_depth_v, const T* d_o,
                               const T* o, const T* lse, const T* q, const T* k, const T* v,
                               const T* depth_k, const T* depth_v, const ModaShape& s) override {
    cpu::moda_attention_backward(dq, dk, dv, d_depth_k, d_depth_v, d_o, o, lse, q, k, v, depth_k,
                                 depth_v, s);
  }
  void swiglu_forward(T* h, const T* a, const T* b, int64_t count) override {
    cpu::swiglu_forward(h, a, b, count);
  }
  void swiglu_backward(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count) override {
    cpu::swiglu_backward(da, db, dh, a, b, count);
  }

  void embedding_forward(T* x, const int32_t* tokens, const T* table, int64_t rows,
                         int d) override {
    cpu::embedding_forward(x, tokens, table, rows, d);
  }
  void embedding_backward(T* dtable, const int32_t* tokens, const T* dx, int64_t rows,
                          int d) override {
    cpu::embedding_backward(dtable, tokens, dx, rows, d);
  }
  void cross_entropy(double* loss_sum, const T* h, const T* W, const int32_t* targets,
                     const HeadShape& s, T* dh, T* dW, double grad_scale) override {
    // The same additions in the same order as a host sum of the returned micro-batch sums.
    *loss_sum += cpu::lm_head_cross_entropy(h, W, targets, s, dh, dW, grad_scale);
  }
  void cross_entropy_rows(double* losses, const T* h, const T* W, const int32_t* targets,
                          const HeadShape& s) override {
    for (int64_t r = 0; r < s.rows; ++r)  // one row at a time: the fused head returns sums only
      losses[r] = cpu::lm_head_cross_entropy<T>(h + r * s.d, W, targets + r, {1, s.d, s.vocab},
                                                nullptr, nullptr, 0.0);
  }
  void logits(T* out, const T* h, const T* W, const HeadShape& s) override {
    cpu::lm_head_logits(out, h, W, s);
  }

  void copy(T* dst, const T* src, int64_t count) override {
    if (dst != src) std::copy_n(src, count, dst);
  }
  void upload_tokens(int32_t* dst, const int32_t* host, int64_t count) override {
    std::copy_n(host, count, dst);
  }
  void axpby(T* y, T a, const T* x, T b, int64_t count) override {
    if (b == T(0)) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < count; ++i) y[i] = a * x[i];
    } else if (a == T(1) && b == T(1)) {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < count; ++i) y[i] += x[i];
    } else {
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < count; ++i) y[i] = b * y[i] + a * x[i];
    }
  }
  void copy_rows(T* dst, int64_t dst_stride, const T* src, int64_t src_stride, int64_t rows,
                 int width) override {
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(src + r * src_stride, width, dst + r * dst_stride);
  }

 private:
  cpu::RopeTable rope_;
  double rope_theta_ = 0;
  std::unique_ptr<StorageOps<T, bfloat16>> bf16_storage_;
};

}  // namespace

template <class T>
std::unique_ptr<Ops<T>> make_cpu_ops() {
  return std::make_unique<CpuOps<T>>();
}

template std::unique_ptr<Ops<float>> make_cpu_ops<float>();
template std::unique_ptr<Ops<double>> make_cpu_ops<double>();

}  // namespace db
