#include "ops/cpu/attention.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "ops/cpu/gemm.hpp"

namespace db::cpu {
namespace {

// S = scale · Q_bh · K_bhᵀ for one (batch, head) pair: [T, T], rows strided by heads·hd.
template <class T>
void scores(T* S, const T* q, const T* k, const AttentionShape& s, double scale) {
  const int ldq = s.heads * s.head_dim, ldk = s.kv_heads * s.head_dim;
  gemm(false, true, s.seq_len, s.seq_len, s.head_dim, T(scale), q, ldq, k, ldk, T(0), S, s.seq_len);
}

}  // namespace

template <class T>
void attention_forward(T* o, T* lse, const T* q, const T* k, const T* v, const AttentionShape& s) {
  const int Tn = s.seq_len, hd = s.head_dim, group = s.heads / s.kv_heads;
  const double scale = 1.0 / std::sqrt(double(hd));
  const int64_t q_batch = int64_t(Tn) * s.heads * hd, kv_batch = int64_t(Tn) * s.kv_heads * hd;
#pragma omp parallel
  {
    std::vector<T> S(size_t(Tn) * Tn);
#pragma omp for schedule(static) collapse(2)
    for (int64_t b = 0; b < s.batch; ++b)
      for (int h = 0; h < s.heads; ++h) {
        const int kvh = h / group;
        const T* qb = q + b * q_batch + h * hd;
        const T* kb = k + b * kv_batch + kvh * hd;
        const T* vb = v + b * kv_batch + kvh * hd;
        scores(S.data(), qb, kb, s, scale);
        T* lse_bh = lse + (b * s.heads + h) * Tn;
        for (int i = 0; i < Tn; ++i) {
          T* row = &S[size_t(i) * Tn];
          T m = -std::numeric_limits<T>::infinity();
          for (int j = 0; j <= i; ++j) m = std::max(m, row[j]);
          double sum = 0;
          for (int j = 0; j <= i; ++j) {
            row[j] = std::exp(row[j] - m);
            sum += row[j];
          }
          const T inv = T(1.0 / sum);
          for (int j = 0; j <= i; ++j) row[j] *= inv;
          for (int j = i + 1; j < Tn; ++j) row[j] = 0;
          lse_bh[i] = T(m + std::log(sum));
        }
        gemm(false, false, Tn, hd, Tn, T(1), S.data(), Tn, vb, s.kv_heads * hd, T(0),
             o + b * q_batch + h * hd, s.heads * hd);
      }
  }
}

template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* d_o, const T* o, const T* lse, const T* q,
                        const T* k, const T* v, const AttentionShape& s) {
  const int Tn = s.seq_len, hd = s.head_dim, group = s.heads / s.kv_heads;
  const int ldq = s.heads * hd, ldk = s.kv_heads * hd;
  const double scale = 1.0 / std::sqrt(double(hd));
  const int64_t q_batch = int64_t(Tn) * ldq, kv_batch = int64_t(Tn) * ldk;
  // Parallel over (batch, kv head): the query heads of one group add into the same dk, dv.
#pragma omp parallel
  {
    std::vector<T> P(size_t(Tn) * Tn), dP(size_t(Tn) * Tn);
    std::vector<T> D(Tn);
#pragma omp for schedule(static) collapse(2)
    for (int64_t b = 0; b < s.batch; ++b)
      for (int kvh = 0; kvh < s.kv_heads; ++kvh) {
        const T* kb = k + b * kv_batch + kvh * hd;
        const T* vb = v + b * kv_batch + kvh * hd;
        T* dkb = dk + b * kv_batch + kvh * hd;
        T* dvb = dv + b * kv_batch + kvh * hd;
        for (int g = 0; g < group; ++g) {
          const int h = kvh * group + g;
          const int64_t off = b * q_batch + h * hd;
          scores(P.data(), q + off, kb, s, scale);
          const T* lse_bh = lse + (b * s.heads + h) * Tn;
          for (int i = 0; i < Tn; ++i) {
            T* row = &P[size_t(i) * Tn];
            for (int j = 0; j <= i; ++j) row[j] = std::exp(row[j] - lse_bh[i]);
            for (int j = i + 1; j < Tn; ++j) row[j] = 0;
            double dot = 0;  // D_i = Σ_d dO_i·O_i = Σ_j P_ij·dP_ij
            for (int e = 0; e < hd; ++e)
              dot += double(d_o[off + int64_t(i) * ldq + e]) * o[off + int64_t(i) * ldq + e];
            D[i] = T(dot);
          }
          const T first = T(g == 0 ? 0 : 1);  // the first head of the group overwrites dk, dv
          // dV += Pᵀ·dO ; dP = dO·Vᵀ
          gemm(true, false, Tn, hd, Tn, T(1), P.data(), Tn, d_o + off, ldq, first, dvb, ldk);
          gemm(false, true, Tn, Tn, hd, T(1), d_o + off, ldq, vb, ldk, T(0), dP.data(), Tn);
          // dS = P ⊙ (dP − D), folded with the softmax scale.
          for (int i = 0; i < Tn; ++i) {
            T* prow = &P[size_t(i) * Tn];
            const T* dprow = &dP[size_t(i) * Tn];
            for (int j = 0; j <= i; ++j) prow[j] = T(scale) * prow[j] * (dprow[j] - D[i]);
          }
          // dQ = dS·K ; dK += dSᵀ·Q
          gemm(false, false, Tn, hd, Tn, T(1), P.data(), Tn, kb, ldk, T(0), dq + off, ldq);
          gemm(true, false, Tn, hd, Tn, T(1), P.data(), Tn, q + off, ldq, first, dkb, ldk);
        }
      }
  }
}

template void attention_forward<float>(float*, float*, const float*, const float*, const float*,
                                       const AttentionShape&);
template void attention_forward<double>(double*, double*, const double*, const double*,
                                        const double*, const AttentionShape&);
template void attention_backward<float>(float*, float*, float*, const float*, const float*,
                                        const float*, const float*, const float*, const float*,
                                        const AttentionShape&);
template void attention_backward<double>(double*, double*, double*, const double*, const double*,
                                         const double*, const double*, const double*, const double*,
                                         const AttentionShape&);

}  // namespace db::cpu
