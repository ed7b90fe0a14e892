#include "ops/cpu/depth_softmax.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/parallel.hpp"
#include "ops/rows/depth_softmax_rows.hpp"

namespace db::cpu {

template <class T>
void depth_softmax_forward(T* h, T* weights, T* rstd, const T* const* sources, const T* query,
                           const T* key_gain, DepthMixShape s) {
  const int d = s.d, m = s.sources;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < s.rows; ++r) {
    std::vector<double> logit(m);
    for (int i = 0; i < m; ++i) {
      const T* v = sources[i] + r * d;
      double sum_sq = 0, dot = 0;
      for (int j = 0; j < d; ++j) sum_sq += double(v[j]) * v[j];
      const T rs = rows::depth_key_rstd<T>(sum_sq, d, s.eps);
      rstd[r * m + i] = rs;
      // The key is rounded to T as a materialised RMSNorm output would be.
      for (int j = 0; j < d; ++j) dot += rows::depth_logit_term(query[j], key_gain[j], v[j], rs);
      logit[i] = dot;
    }
    const double total = rows::depth_softmax_exp_in_place(logit.data(), m);
    T* hr = h + r * d;
    std::fill(hr, hr + d, T(0));
    for (int i = 0; i < m; ++i) {
      const T w = T(logit[i] / total);
      weights[r * m + i] = w;
      const T* v = sources[i] + r * d;
      for (int j = 0; j < d; ++j) hr[j] += w * v[j];
    }
  }
}

template <class T>
void depth_softmax_backward(T* const* dsources, T* dquery, T* dkey_gain, const T* dh,
                            const T* const* sources, const T* weights, const T* rstd,
                            const T* query, const T* key_gain, DepthMixShape s) {
  const int d = s.d, m = s.sources;
  const int64_t chunks = chunk_count(s.rows);
  std::vector<double> dq_part(chunks * d, 0.0), dg_part(chunks * d, 0.0);
  for_each_row_chunk(s.rows, [&](int64_t c, int64_t begin, int64_t end) {
    std::vector<double> dw(m), dlogit(m);
    double* dq = &dq_part[c * d];
    double* dg = &dg_part[c * d];
    for (int64_t r = begin; r < end; ++r) {
      const T* dhr = dh + r * d;
      const T* w = weights + r * m;
      double mean_dw = 0;
      for (int i = 0; i < m; ++i) {
        const T* v = sources[i] + r * d;
        double dot = 0;
        for (int j = 0; j < d; ++j) dot += double(dhr[j]) * v[j];
        dw[i] = dot;
        mean_dw += double(w[i]) * dot;
      }
      rows::depth_softmax_logit_grads(dlogit.data(), dw.data(), w, mean_dw, m);
      for (int i = 0; i < m; ++i) {
        const T* v = sources[i] + r * d;
        T* dv = dsources[i] + r * d;
        const double rs = rstd[r * m + i];
        // logit = Σ_j q_j g_j v_j rs; dK_j = dlogit·q_j; RMSNorm backward with gain g.
        double dot = 0;  // Σ_j dK_j g_j v_j
        for (int j = 0; j < d; ++j) {
          const double key_hat = double(v[j]) * rs;
          dq[j] += dlogit[i] * key_gain[j] * key_hat;
          dg[j] += dlogit[i] * query[j] * key_hat;
          dot += dlogit[i] * query[j] * key_gain[j] * v[j];
        }
        const double coef = rs * rs * rs * dot / d;
        for (int j = 0; j < d; ++j)
          dv[j] += rows::depth_source_grad(w[i], dhr[j], rs, dlogit[i], query[j], key_gain[j], coef,
                                           v[j]);
      }
    }
  });
  add_chunk_partials(dquery, dq_part, chunks, d);
  add_chunk_partials(dkey_gain, dg_part, chunks, d);
}

template void depth_softmax_forward<float>(float*, float*, float*, const float* const*,
                                           const float*, const float*, DepthMixShape);
template void depth_softmax_forward<double>(double*, double*, double*, const double* const*,
                                            const double*, const double*, DepthMixShape);
template void depth_softmax_backward<float>(float* const*, float*, float*, const float*,
                                            const float* const*, const float*, const float*,
                                            const float*, const float*, DepthMixShape);
template void depth_softmax_backward<double>(double* const*, double*, double*, const double*,
                                             const double* const*, const double*, const double*,
                                             const double*, const double*, DepthMixShape);

}  // namespace db::cpu
