#include "ops/cpu/cpu_ops.hpp"

#include <algorithm>
#include <vector>

#include "ops/cpu/attention.hpp"
#include "ops/cpu/cross_entropy.hpp"
#include "ops/cpu/depth_softmax.hpp"
#include "ops/cpu/embedding.hpp"
#include "ops/cpu/gemm.hpp"
#include "ops/cpu/linear.hpp"
#include "ops/cpu/moda_attention.hpp"
#include "ops/cpu/rmsnorm.hpp"
#include "ops/cpu/rope.hpp"
#include "ops/cpu/sinkhorn.hpp"
#include "ops/cpu/swiglu.hpp"
#include "ops/rows/stream_rows.hpp"

namespace db {
namespace {

template <class T>
class CpuOps final : public Ops<T> {
 public:
  MemorySpace space() const override { return MemorySpace::host; }
  const char* name() const override { return "cpu"; }

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
  double cross_entropy(const T* h, const T* W, const int32_t* targets, const HeadShape& s, T* dh,
                       T* dW, double grad_scale) override {
    return cpu::lm_head_cross_entropy(h, W, targets, s, dh, dW, grad_scale);
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

  void broadcast_streams(T* state, const T* x, int64_t rows, int n, int d) override {
    for (int64_t r = 0; r < rows; ++r)
      for (int s = 0; s < n; ++s) std::copy_n(x + r * d, d, state + (r * n + s) * d);
  }
  void sum_streams(T* out, const T* state, T scale, int64_t rows, int n, int d) override {
    for (int64_t r = 0; r < rows; ++r)
      for (int j = 0; j < d; ++j)
        out[r * d + j] = rows::sum_streams_at(state + r * n * d, scale, n, d, j);
  }
  void combine_streams(T* x, const T* H, const T* weights, int stride, int64_t rows, int n,
                       int d) override {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      for (int e = 0; e < d; ++e)
        x[r * d + e] =
            rows::combine_streams_at(H + r * n * d, weights + r * n * stride, stride, n, d, e);
  }
  void combine_streams_backward(T* dweights, T* dH, const T* dx, const T* H, const T* weights,
                                int stride, int64_t rows, int n, int d) override {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      for (int s = 0; s < n; ++s) {
        const T* h = H + (r * n + s) * d;
        T* dh = dH + (r * n + s) * d;
        const T* g = dx + r * d;
        const T w = weights[(r * n + s) * stride];
        dweights[(r * n + s) * stride] = dot(g, h, d);
        for (int e = 0; e < d; ++e) dh[e] += w * g[e];
      }
  }
  void mix_streams(T* out, const T* H, const T* y, const T* post, const T* mix, StreamMapLayout map,
                   int64_t rows, int n, int d) override {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      for (int i = 0; i < n; ++i)
        for (int e = 0; e < d; ++e)
          out[(r * n + i) * d + e] = rows::mix_streams_at(H + r * n * d, y + r * d, post + r * n,
                                                          mix + r * map.row, map, n, d, i, e);
  }
  void mix_streams_backward(T* dy, T* dpost, T* dmix, T* dH, const T* g, const T* H, const T* y,
                            const T* post, const T* mix, StreamMapLayout map, int64_t rows, int n,
                            int d) override {
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const T* gr = g + r * n * d;
      const T* Hr = H + r * n * d;
      for (int e = 0; e < d; ++e) {
        dy[r * d + e] = rows::mix_streams_branch_grad_at(gr, post + r * n, n, d, e);
        for (int j = 0; j < n; ++j)
          dH[(r * n + j) * d + e] =
              rows::mix_streams_input_grad_at(gr, mix + r * map.row, map, n, d, j, e);
      }
      for (int i = 0; i < n; ++i) {
        dpost[r * n + i] = dot(gr + i * d, y + r * d, d);
        for (int j = 0; j < n; ++j)
          dmix[r * map.row + i * map.out + j * map.in + map.offset] =
              dot(gr + i * d, Hr + j * d, d);
      }
    }
  }

  void hc_coefficients(T* alpha, T* beta, T* ta, T* tb, const T* static_alpha, const T* static_beta,
                       const T* s_alpha, const T* s_beta, int64_t rows, int n) override {
    const int n1 = n + 1;
    for (int64_t i = 0; i < rows * n * n1; ++i) {
      ta[i] = std::tanh(ta[i]);
      alpha[i] = rows::hc_coefficient(static_alpha[i % (n * n1)], *s_alpha, ta[i]);
    }
    for (int64_t i = 0; i < rows * n; ++i) {
      tb[i] = std::tanh(tb[i]);
      beta[i] = rows::hc_coefficient(static_beta[i % n], *s_beta, tb[i]);
    }
  }
  void hc_coefficients_backward(T* dza, T* dzb, T* dstatic_alpha, T* dstatic_beta, T* ds_alpha,
                                T* ds_beta, const T* dalpha, const T* dbeta, const T* ta,
                                const T* tb, const T* s_alpha, const T* s_beta, int64_t rows,
                                int n) override {
    const int n1 = n + 1;
    std::vector<double> dsa_sum(n * n1, 0.0), dsb_sum(n, 0.0);
    double dscale_alpha = 0, dscale_beta = 0;
    for (int64_t i = 0; i < rows * n * n1; ++i) {
      dsa_sum[i % (n * n1)] += dalpha[i];
      dscale_alpha += double(dalpha[i]) * ta[i];
      dza[i] = rows::hc_coefficient_preactivation_grad(dalpha[i], *s_alpha, ta[i]);
    }
    for (int64_t i = 0; i < rows * n; ++i) {
      dsb_sum[i % n] += dbeta[i];
      dscale_beta += double(dbeta[i]) * tb[i];
      dzb[i] = rows::hc_coefficient_preactivation_grad(dbeta[i], *s_beta, tb[i]);
    }
    for (int i = 0; i < n * n1; ++i) dstatic_alpha[i] += T(dsa_sum[i]);
    for (int i = 0; i < n; ++i) dstatic_beta[i] += T(dsb_sum[i]);
    *ds_alpha += T(dscale_alpha);
    *ds_beta += T(dscale_beta);
  }

  void mhc_coefficients(T* pre, T* post, T* res_logits, const T* z, const T* gates, const T* bias,
                        int64_t rows, int n) override {
    const int nn = n * n, m = nn + 2 * n;
    for (int64_t r = 0; r < rows; ++r)
      rows::mhc_coefficients_row(pre + r * n, post + r * n, res_logits + r * nn, z + r * m, gates,
                                 bias, n);
  }
  void mhc_coefficients_backward(T* dz, T* dgates, T* dbias, const T* dpre, const T* dpost,
                                 const T* dres_logits, const T* z, const T* pre, const T* post,
                                 const T* gates, int64_t rows, int n) override {
    const int nn = n * n, m = nn + 2 * n;
    double dgate[3] = {0, 0, 0};
    std::vector<double> dbias_sum(m, 0.0);
    std::vector<T> dl(m);
    for (int64_t r = 0; r < rows; ++r) {
      rows::mhc_logit_grads_row(dl.data(), dpre + r * n, dpost + r * n, dres_logits + r * nn,
                                pre + r * n, post + r * n, n);
      for (int c = 0; c < m; ++c) {
        const int gate = rows::mhc_gate_of(c, n);
        dbias_sum[c] += dl[c];
        dgate[gate] += double(dl[c]) * z[r * m + c];
        dz[r * m + c] = gates[gate] * dl[c];
      }
    }
    for (int i = 0; i < 3; ++i) dgates[i] += T(dgate[i]);
    for (int c = 0; c < m; ++c) dbias[c] += T(dbias_sum[c]);
  }
  void sinkhorn_forward(T* out, const T* logits, const SinkhornShape& s) override {
    cpu::sinkhorn_forward(out, logits, s);
  }
  void sinkhorn_backward(T* dlogits, const T* dout, const T* logits,
                         const SinkhornShape& s) override {
    cpu::sinkhorn_backward(dlogits, dout, logits, s);
  }

  void depth_softmax_forward(T* h, T* weights, T* rstd, const T* const* sources, const T* query,
                             const T* key_gain, const DepthMixShape& s) override {
    cpu::depth_softmax_forward(h, weights, rstd, sources, query, key_gain, s);
  }
  void depth_softmax_backward(T* const* dsources, T* dquery, T* dkey_gain, const T* dh,
                              const T* const* sources, const T* weights, const T* rstd,
                              const T* query, const T* key_gain, const DepthMixShape& s) override {
    cpu::depth_softmax_backward(dsources, dquery, dkey_gain, dh, sources, weights, rstd, query,
                                key_gain, s);
  }

 private:
  // ⟨a, b⟩ accumulated in double whatever T, as the reference loops did.
  static T dot(const T* a, const T* b, int count) {
    double sum = 0;
    for (int e = 0; e < count; ++e) sum += double(a[e]) * b[e];
    return T(sum);
  }

  cpu::RopeTable rope_;
  double rope_theta_ = 0;
};

}  // namespace

template <class T>
std::unique_ptr<Ops<T>> make_cpu_ops() {
  return std::make_unique<CpuOps<T>>();
}

template std::unique_ptr<Ops<float>> make_cpu_ops<float>();
template std::unique_ptr<Ops<double>> make_cpu_ops<double>();

}  // namespace db
