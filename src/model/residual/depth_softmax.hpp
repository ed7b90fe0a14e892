// The AttnRes depth softmax (§9, §10), per token: h = Σ_i softmax_i(q·RMSNorm(v_i; g))·v_i over
// the m sources v_i, and its backward. DB_HD functors launched through ops/launch.hpp (one row
// each, shared by a warp on a GPU), so the CPU loop and the CUDA kernel run the same body.
// Accumulators are double whatever T, and the query and key-gain gradients are summed over rows in
// fixed chunks (for_each_row_sum): the same bits on any thread count.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/host_device.hpp"
#include "ops/launch.hpp"

namespace db {

struct DepthMixShape {
  int64_t rows;
  int d;
  int sources;  // m
  double eps;
};

// The source pointers travel by value in the functor (a kernel parameter on the GPU), so a
// consumer mixes at most this many sources: Full AttnRes with up to 127 blocks. The functors are
// compiled for 16, 64 or 256 sources and the smallest that holds m runs: their per-source
// arrays live in each GPU thread's local memory, which the device reserves for every thread it
// can hold (4 KiB per thread for 256 sources: ≈ 1.1 GiB on an H200).
constexpr int kMaxDepthSources = 256;

namespace depth_softmax_kernels {

// The key statistic 1/sqrt(mean(v²) + eps) from Σ v².
template <class T>
DB_HD T key_rstd(double sum_squares, int d, double eps) {
  using std::sqrt;
  return T(1.0 / sqrt(sum_squares / d + eps));
}

// One term of the logit q·K_i: the key value is rounded to T as a materialised RMSNorm output
// would be.
template <class T>
DB_HD double logit_term(T query, T key_gain, T value, T rstd) {
  return double(query) * T(key_gain * value * rstd);
}

// logit[i] ← exp(logit[i] − max) over the m sources; returns their sum.
DB_HD double exp_in_place(double* logit, int m) {
  using std::exp;
  double mx = logit[0];
  for (int i = 1; i < m; ++i) mx = logit[i] > mx ? logit[i] : mx;
  double total = 0;
  for (int i = 0; i < m; ++i) total += (logit[i] = exp(logit[i] - mx));
  return total;
}

// One row r, its d columns shared by `lanes` (ops/launch.hpp: one lane on the host, a warp on a
// GPU). Per column the sources are visited in order; dot products are lane partials added by
// lanes.sum (on the host: the plain serial sums).
template <class T, int M>
struct Forward {
  T *h, *weights, *rstd;
  PointerList<const T*, M> sources;
  const T *query, *key_gain;
  int d, m;
  double eps;
  template <class Lanes>
  DB_HD void operator()(int64_t r, const Lanes& lanes) const {
    double logit[M];
    for (int i = 0; i < m; ++i) {
      const T* v = sources[i] + r * d;
      double sum_squares = 0, dot = 0;
      for (int j = lanes.first(); j < d; j += lanes.step()) sum_squares += double(v[j]) * v[j];
      const T rs = key_rstd<T>(lanes.sum(sum_squares), d, eps);
      if (lanes.leader()) rstd[r * m + i] = rs;
      for (int j = lanes.first(); j < d; j += lanes.step())
        dot += logit_term(query[j], key_gain[j], v[j], rs);
      logit[i] = lanes.sum(dot);
    }
    const double total = exp_in_place(logit, m);
    T* hr = h + r * d;
    for (int j = lanes.first(); j < d; j += lanes.step()) hr[j] = T(0);
    for (int i = 0; i < m; ++i) {
      const T w = T(logit[i] / total);
      if (lanes.leader()) weights[r * m + i] = w;
      const T* v = sources[i] + r * d;
      for (int j = lanes.first(); j < d; j += lanes.step()) hr[j] += w * v[j];
    }
  }
};

// Row r's source gradients (added), and its query and key-gain contributions into
// sums[0, d) and sums[d, 2d) (each lane into its own columns).
template <class T, int M>
struct Backward {
  PointerList<T*, M> dsources;
  PointerList<const T*, M> sources;
  const T *dh, *weights, *rstd, *query, *key_gain;
  int d, m;
  template <class Lanes>
  DB_HD void operator()(int64_t r, double* sums, const Lanes& lanes) const {
    double dw[M], dlogit[M];
    double* dq = sums;
    double* dg = sums + d;
    const T* dhr = dh + r * d;
    const T* w = weights + r * m;
    double mean_dw = 0;  // Σ_k w_k·dw_k, in source order
    for (int i = 0; i < m; ++i) {
      const T* v = sources[i] + r * d;
      double dot = 0;
      for (int j = lanes.first(); j < d; j += lanes.step()) dot += double(dhr[j]) * v[j];
      dw[i] = lanes.sum(dot);
      mean_dw += double(w[i]) * dw[i];
    }
    for (int i = 0; i < m; ++i) dlogit[i] = double(w[i]) * (dw[i] - mean_dw);
    for (int i = 0; i < m; ++i) {
      const T* v = sources[i] + r * d;
      T* dv = dsources[i] + r * d;
      const double rs = rstd[r * m + i];
      // logit = Σ_j q_j g_j v_j rs; dK_j = dlogit·q_j; the RMSNorm backward with gain g.
      double dot = 0;  // Σ_j dK_j g_j v_j
      for (int j = lanes.first(); j < d; j += lanes.step()) {
        const double key_hat = double(v[j]) * rs;
        dq[j] += dlogit[i] * key_gain[j] * key_hat;
        dg[j] += dlogit[i] * query[j] * key_hat;
        dot += dlogit[i] * query[j] * key_gain[j] * v[j];
      }
      const double coef = rs * rs * rs * lanes.sum(dot) / d;
      // Through the weighted sum (w·dh) and through the key norm.
      for (int j = lanes.first(); j < d; j += lanes.step())
        dv[j] += T(double(w[i]) * dhr[j] + rs * dlogit[i] * query[j] * key_gain[j] - coef * v[j]);
    }
  }
};

// Calls run(std::integral_constant<int, M>) for the smallest capacity M of 16, 64, 256 that
// holds m sources.
template <class Run>
void with_source_capacity(int m, const Run& run) {
  DB_REQUIRE(
      m >= 1 && m <= kMaxDepthSources,
      std::to_string(m) + " depth sources exceed the capacity " + std::to_string(kMaxDepthSources));
  if (m <= 16)
    run(std::integral_constant<int, 16>{});
  else if (m <= 64)
    run(std::integral_constant<int, 64>{});
  else
    run(std::integral_constant<int, kMaxDepthSources>{});
}

}  // namespace depth_softmax_kernels

// h [rows, d] = the mix of `sources` ([rows, d] each); weights, rstd [rows, sources] kept.
template <class T>
void depth_softmax_forward(MemorySpace space, T* h, T* weights, T* rstd,
                           const std::vector<const T*>& sources, const T* query, const T* key_gain,
                           const DepthMixShape& s) {
  DB_REQUIRE(s.sources >= 1 && s.sources == int(sources.size()),
             "depth_softmax_forward: sources do not match the shape");
  depth_softmax_kernels::with_source_capacity(s.sources, [&](auto capacity) {
    constexpr int M = decltype(capacity)::value;
    for_each_row_lanes(
        space, s.rows,
        depth_softmax_kernels::Forward<T, M>{h, weights, rstd, PointerList<const T*, M>(sources),
                                             query, key_gain, s.d, s.sources, s.eps});
  });
}

// dsources added; dquery, dkey_gain added (row sums in a fixed order).
template <class T>
void depth_softmax_backward(MemorySpace space, const std::vector<T*>& dsources, T* dquery,
                            T* dkey_gain, const T* dh, const std::vector<const T*>& sources,
                            const T* weights, const T* rstd, const T* query, const T* key_gain,
                            const DepthMixShape& s) {
  SumTargets<T> targets;
  targets.add(dquery, s.d).add(dkey_gain, s.d);
  depth_softmax_kernels::with_source_capacity(s.sources, [&](auto capacity) {
    constexpr int M = decltype(capacity)::value;
    for_each_row_sum_lanes(space, s.rows, targets,
                           depth_softmax_kernels::Backward<T, M>{
                               PointerList<T*, M>(dsources), PointerList<const T*, M>(sources), dh,
                               weights, rstd, query, key_gain, s.d, s.sources});
  });
}

}  // namespace db
