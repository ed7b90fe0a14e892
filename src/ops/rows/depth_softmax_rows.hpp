// Per-token math of the AttnRes depth softmax (§9, §10), shared by the CPU loop
// (ops/cpu/depth_softmax.cpp) and the CUDA kernels (ops/cuda/depth_softmax.cu). The backends
// decide who sums the d-long dot products (a loop, a thread block); these functions hold every
// formula, with double accumulators whatever T, so both backends round alike.
#pragma once
#include <cmath>

#include "core/host_device.hpp"

namespace db::rows {

// The stored key statistic 1/sqrt(mean(v²) + eps) from Σ v².
template <class T>
DB_HD T depth_key_rstd(double sum_squares, int d, double eps) {
  using std::sqrt;
  return T(1.0 / sqrt(sum_squares / d + eps));
}

// One term of the logit q·K_i: the key value is rounded to T as a materialised RMSNorm output
// would be.
template <class T>
DB_HD double depth_logit_term(T query, T key_gain, T value, T rstd) {
  return double(query) * T(key_gain * value * rstd);
}

// logit[i] ← exp(logit[i] − max) over the m sources; returns their sum (the softmax weights
// are logit[i] / sum).
DB_HD double depth_softmax_exp_in_place(double* logit, int m) {
  using std::exp;
  double mx = logit[0];
  for (int i = 1; i < m; ++i) mx = logit[i] > mx ? logit[i] : mx;
  double total = 0;
  for (int i = 0; i < m; ++i) total += (logit[i] = exp(logit[i] - mx));
  return total;
}

// The logit gradients from dw_i = ⟨dh, v_i⟩, the weights and mean_dw = Σ_k w_k·dw_k (which the
// caller accumulates as it computes the dw_i, in source order): dlogit_i = w_i·(dw_i − mean_dw).
template <class T>
DB_HD void depth_softmax_logit_grads(double* dlogit, const double* dw, const T* weights,
                                     double mean_dw, int m) {
  for (int i = 0; i < m; ++i) dlogit[i] = double(weights[i]) * (dw[i] - mean_dw);
}

// Value j of ∂loss/∂v_i: through the weighted sum (w·dh) and through the key RMSNorm with gain g
// (rstd·dlogit·q_j·g_j − coef·v_j, coef = rstd³·Σ_k dlogit·q_k·g_k·v_k / d).
template <class T>
DB_HD T depth_source_grad(T weight, T dh, double rstd, double dlogit, T query, T key_gain,
                          double coef, T value) {
  return T(double(weight) * dh + rstd * dlogit * query * key_gain - coef * value);
}

}  // namespace db::rows
