#include "ops/cpu/sinkhorn.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace db::cpu {
namespace {

// Runs the whole iteration on one matrix; `trace` (if not null) receives the 2·iters + 1
// iterates: M0, then after each row and each column normalisation.
void sinkhorn_one(double* m, const double* logits, int n, int iters, double eps, double* trace) {
  for (int i = 0; i < n; ++i) {
    double mx = logits[i * n];
    for (int j = 1; j < n; ++j) mx = std::max(mx, logits[i * n + j]);
    for (int j = 0; j < n; ++j) m[i * n + j] = std::exp(logits[i * n + j] - mx);
  }
  const int nn = n * n;
  if (trace) std::copy(m, m + nn, trace);
  for (int it = 0; it < iters; ++it) {
    for (int i = 0; i < n; ++i) {
      double sum = 0;
      for (int j = 0; j < n; ++j) sum += m[i * n + j];
      for (int j = 0; j < n; ++j) m[i * n + j] /= sum + eps;
    }
    if (trace) std::copy(m, m + nn, trace + (2 * it + 1) * nn);
    for (int j = 0; j < n; ++j) {
      double sum = 0;
      for (int i = 0; i < n; ++i) sum += m[i * n + j];
      for (int i = 0; i < n; ++i) m[i * n + j] /= sum + eps;
    }
    if (trace) std::copy(m, m + nn, trace + (2 * it + 2) * nn);
  }
}

}  // namespace

template <class T>
void sinkhorn_forward(T* out, const T* logits, SinkhornShape s) {
  const int nn = s.n * s.n;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < s.count; ++r) {
    std::vector<double> l(logits + r * nn, logits + (r + 1) * nn), m(nn);
    sinkhorn_one(m.data(), l.data(), s.n, s.iters, s.eps, nullptr);
    for (int e = 0; e < nn; ++e) out[r * nn + e] = T(m[e]);
  }
}

template <class T>
void sinkhorn_backward(T* dlogits, const T* dout, const T* logits, SinkhornShape s) {
  const int n = s.n, nn = n * n;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < s.count; ++r) {
    std::vector<double> l(logits + r * nn, logits + (r + 1) * nn), m(nn);
    std::vector<double> trace(size_t(2 * s.iters + 1) * nn), g(dout + r * nn, dout + (r + 1) * nn);
    sinkhorn_one(m.data(), l.data(), n, s.iters, s.eps, trace.data());
    for (int it = s.iters - 1; it >= 0; --it) {
      // Column step: out = in / (colsum(in) + eps); its output is iterate 2it+2, input 2it+1.
      // d in_ij = (d out_ij − Σ_k d out_kj · out_kj) / (colsum_j + eps).
      const double* in = &trace[size_t(2 * it + 1) * nn];
      const double* out = &trace[size_t(2 * it + 2) * nn];
      for (int j = 0; j < n; ++j) {
        double sum = 0, dot = 0;
        for (int i = 0; i < n; ++i) sum += in[i * n + j], dot += g[i * n + j] * out[i * n + j];
        for (int i = 0; i < n; ++i) g[i * n + j] = (g[i * n + j] - dot) / (sum + s.eps);
      }
      // Row step: iterate 2it+1 from 2it.
      in = &trace[size_t(2 * it) * nn];
      out = &trace[size_t(2 * it + 1) * nn];
      for (int i = 0; i < n; ++i) {
        double sum = 0, dot = 0;
        for (int j = 0; j < n; ++j) sum += in[i * n + j], dot += g[i * n + j] * out[i * n + j];
        for (int j = 0; j < n; ++j) g[i * n + j] = (g[i * n + j] - dot) / (sum + s.eps);
      }
    }
    // M0 = exp(l − rowmax(l)): dl_ij = g_ij·M0_ij, and the row max receives −Σ_j g_ij·M0_ij,
    // shared equally between tied maxima (torch.amax).
    const double* m0 = trace.data();
    for (int i = 0; i < n; ++i) {
      double mx = l[i * n], total = 0;
      for (int j = 1; j < n; ++j) mx = std::max(mx, l[i * n + j]);
      int ties = 0;
      for (int j = 0; j < n; ++j) ties += l[i * n + j] == mx;
      for (int j = 0; j < n; ++j) total += g[i * n + j] * m0[i * n + j];
      for (int j = 0; j < n; ++j)
        dlogits[r * nn + i * n + j] =
            T(g[i * n + j] * m0[i * n + j] - (l[i * n + j] == mx ? total / ties : 0.0));
    }
  }
}

template void sinkhorn_forward<float>(float*, const float*, SinkhornShape);
template void sinkhorn_forward<double>(double*, const double*, SinkhornShape);
template void sinkhorn_backward<float>(float*, const float*, const float*, SinkhornShape);
template void sinkhorn_backward<double>(double*, const double*, const double*, SinkhornShape);

}  // namespace db::cpu
