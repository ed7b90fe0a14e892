#include "ops/cpu/moda_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ops/cpu/gemm.hpp"

namespace db::cpu {
namespace {

template <class T>
double dot(const T* a, const T* b, int n) {
  double s = 0;
  for (int e = 0; e < n; ++e) s += double(a[e]) * b[e];
  return s;
}

// Offset of depth entry m of row n, kv head g.
int64_t depth_offset(const ModaShape& s, int64_t n, int m, int g) {
  return ((n * s.depth_stride + m) * s.kv_heads + g) * int64_t(s.head_dim);
}

// Scaled logits of one (batch, query head): S [T, T] against the sequence keys (causal part
// only meaningful) and Sd [T, depth] against the same-position depth keys.
template <class T>
void logits(T* S, T* Sd, const T* q, const T* k, const T* depth_k, int64_t b, int h,
            const ModaShape& s, double scale) {
  const int Tn = s.seq_len, hd = s.head_dim, kvh = h / (s.heads / s.kv_heads);
  const int ldq = s.heads * hd, ldk = s.kv_heads * hd;
  const T* qb = q + b * Tn * ldq + h * hd;
  gemm(false, true, Tn, Tn, hd, T(scale), qb, ldq, k + b * Tn * ldk + kvh * hd, ldk, T(0), S, Tn);
  for (int i = 0; i < Tn; ++i)
    for (int m = 0; m < s.depth; ++m)
      Sd[size_t(i) * s.depth + m] =
          T(scale * dot(qb + int64_t(i) * ldq, depth_k + depth_offset(s, b * Tn + i, m, kvh), hd));
}

}  // namespace

template <class T>
void moda_attention_forward(T* o, T* lse, const T* q, const T* k, const T* v, const T* depth_k,
                            const T* depth_v, const ModaShape& s) {
  const int Tn = s.seq_len, hd = s.head_dim, M = s.depth, group = s.heads / s.kv_heads;
  const int ldq = s.heads * hd, ldk = s.kv_heads * hd;
  const double scale = 1.0 / std::sqrt(double(hd));
#pragma omp parallel
  {
    std::vector<T> S(size_t(Tn) * Tn), Sd(size_t(Tn) * std::max(M, 1));
#pragma omp for schedule(static) collapse(2)
    for (int64_t b = 0; b < s.batch; ++b)
      for (int h = 0; h < s.heads; ++h) {
        const int kvh = h / group;
        logits(S.data(), Sd.data(), q, k, depth_k, b, h, s, scale);
        T* lse_bh = lse + (b * s.heads + h) * Tn;
        for (int i = 0; i < Tn; ++i) {  // one joint softmax over [j ≤ i ; m < M]
          T* row = &S[size_t(i) * Tn];
          T* drow = &Sd[size_t(i) * M];
          T mx = -std::numeric_limits<T>::infinity();
          for (int j = 0; j <= i; ++j) mx = std::max(mx, row[j]);
          for (int m = 0; m < M; ++m) mx = std::max(mx, drow[m]);
          double sum = 0;
          for (int j = 0; j <= i; ++j) sum += row[j] = std::exp(row[j] - mx);
          for (int m = 0; m < M; ++m) sum += drow[m] = std::exp(drow[m] - mx);
          const T inv = T(1.0 / sum);
          for (int j = 0; j <= i; ++j) row[j] *= inv;
          for (int j = i + 1; j < Tn; ++j) row[j] = 0;
          for (int m = 0; m < M; ++m) drow[m] *= inv;
          lse_bh[i] = T(mx + std::log(sum));
        }
        T* ob = o + b * Tn * ldq + h * hd;
        gemm(false, false, Tn, hd, Tn, T(1), S.data(), Tn, v + b * Tn * ldk + kvh * hd, ldk, T(0),
             ob, ldq);
        for (int i = 0; i < Tn; ++i)
          for (int m = 0; m < M; ++m) {
            const T p = Sd[size_t(i) * M + m];
            const T* vd = depth_v + depth_offset(s, b * Tn + i, m, kvh);
            for (int e = 0; e < hd; ++e) ob[int64_t(i) * ldq + e] += p * vd[e];
          }
      }
  }
}

template <class T>
void moda_attention_backward(T* dq, T* dk, T* dv, T* d_depth_k, T* d_depth_v, const T* d_o,
                             const T* o, const T* lse, const T* q, const T* k, const T* v,
                             const T* depth_k, const T* depth_v, const ModaShape& s) {
  const int Tn = s.seq_len, hd = s.head_dim, M = s.depth, group = s.heads / s.kv_heads;
  const int ldq = s.heads * hd, ldk = s.kv_heads * hd;
  const double scale = 1.0 / std::sqrt(double(hd));
  // Parallel over (batch, kv head): the query heads of one group add into the same dk, dv and
  // depth gradients.
#pragma omp parallel
  {
    std::vector<T> P(size_t(Tn) * Tn), dP(size_t(Tn) * Tn), Pd(size_t(Tn) * std::max(M, 1));
    std::vector<T> D(Tn);
#pragma omp for schedule(static) collapse(2)
    for (int64_t b = 0; b < s.batch; ++b)
      for (int kvh = 0; kvh < s.kv_heads; ++kvh) {
        const T* kb = k + b * Tn * ldk + kvh * hd;
        const T* vb = v + b * Tn * ldk + kvh * hd;
        T* dkb = dk + b * Tn * ldk + kvh * hd;
        T* dvb = dv + b * Tn * ldk + kvh * hd;
        for (int g = 0; g < group; ++g) {
          const int h = kvh * group + g;
          const int64_t off = b * Tn * ldq + h * hd;
          logits(P.data(), Pd.data(), q, k, depth_k, b, h, s, scale);
          const T* lse_bh = lse + (b * s.heads + h) * Tn;
          for (int i = 0; i < Tn; ++i) {
            T* row = &P[size_t(i) * Tn];
            for (int j = 0; j <= i; ++j) row[j] = std::exp(row[j] - lse_bh[i]);
            for (int j = i + 1; j < Tn; ++j) row[j] = 0;
            for (int m = 0; m < M; ++m)
              Pd[size_t(i) * M + m] = std::exp(Pd[size_t(i) * M + m] - lse_bh[i]);
            // D_i = dO_i·O_i = Σ over all entries of p·dp
            D[i] = T(dot(d_o + off + int64_t(i) * ldq, o + off + int64_t(i) * ldq, hd));
          }
          const T first = T(g == 0 ? 0 : 1);  // the first head of the group overwrites dk, dv
          // Sequence part: dV += Pᵀ·dO ; dP = dO·Vᵀ ; dS = P ⊙ (dP − D)·scale
          gemm(true, false, Tn, hd, Tn, T(1), P.data(), Tn, d_o + off, ldq, first, dvb, ldk);
          gemm(false, true, Tn, Tn, hd, T(1), d_o + off, ldq, vb, ldk, T(0), dP.data(), Tn);
          for (int i = 0; i < Tn; ++i) {
            T* prow = &P[size_t(i) * Tn];
            const T* dprow = &dP[size_t(i) * Tn];
            for (int j = 0; j <= i; ++j) prow[j] = T(scale) * prow[j] * (dprow[j] - D[i]);
          }
          // dQ = dS·K ; dK += dSᵀ·Q
          gemm(false, false, Tn, hd, Tn, T(1), P.data(), Tn, kb, ldk, T(0), dq + off, ldq);
          gemm(true, false, Tn, hd, Tn, T(1), P.data(), Tn, q + off, ldq, first, dkb, ldk);
          // Depth part, per row: dV^d += p·dO ; dS^d = p·(dO·V^d − D)·scale ;
          // dQ += dS^d·K^d ; dK^d += dS^d·q.
          for (int i = 0; i < Tn; ++i) {
            const int64_t n = b * Tn + i;
            const T* doi = d_o + off + int64_t(i) * ldq;
            const T* qi = q + off + int64_t(i) * ldq;
            T* dqi = dq + off + int64_t(i) * ldq;
            for (int m = 0; m < M; ++m) {
              const int64_t at = depth_offset(s, n, m, kvh);
              const T p = Pd[size_t(i) * M + m];
              const T ds = T(scale * p * (dot(doi, depth_v + at, hd) - D[i]));
              for (int e = 0; e < hd; ++e) {
                d_depth_v[at + e] += p * doi[e];
                d_depth_k[at + e] += ds * qi[e];
                dqi[e] += ds * depth_k[at + e];
              }
            }
          }
        }
      }
  }
}

template void moda_attention_forward<float>(float*, float*, const float*, const float*,
                                            const float*, const float*, const float*,
                                            const ModaShape&);
template void moda_attention_forward<double>(double*, double*, const double*, const double*,
                                             const double*, const double*, const double*,
                                             const ModaShape&);
template void moda_attention_backward<float>(float*, float*, float*, float*, float*, const float*,
                                             const float*, const float*, const float*, const float*,
                                             const float*, const float*, const float*,
                                             const ModaShape&);
template void moda_attention_backward<double>(double*, double*, double*, double*, double*,
                                              const double*, const double*, const double*,
                                              const double*, const double*, const double*,
                                              const double*, const double*, const ModaShape&);

}  // namespace db::cpu
