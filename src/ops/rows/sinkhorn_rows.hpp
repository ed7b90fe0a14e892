// Sinkhorn normalisation of one token's n×n matrix (mHC, §8), in double whatever T, shared by
// the CPU loop (ops/cpu/sinkhorn.cpp) and the CUDA kernel (ops/cuda/sinkhorn.cu):
// M = exp(logits − rowmax), then `iters` × { rows ← rows / (rowsum + eps); columns ← columns /
// (colsum + eps) }. The backward differentiates through every step and through the row max
// (like torch.amax: the gradient is shared equally between tied maxima). It reads the forward
// iterates from a trace when the caller keeps one (the CPU), or recomputes each from the logits
// (the GPU, which cannot hold 2·iters + 1 matrices per thread): the same operations in the same
// order, so both give the same bits.
#pragma once
#include <cmath>

#include "core/host_device.hpp"

namespace db::rows {

// One normalisation step in place: rows (even steps) or columns (odd steps).
DB_HD void sinkhorn_step(double* m, int n, bool rows, double eps) {
  for (int a = 0; a < n; ++a) {
    double sum = 0;
    for (int b = 0; b < n; ++b) sum += rows ? m[a * n + b] : m[b * n + a];
    for (int b = 0; b < n; ++b) (rows ? m[a * n + b] : m[b * n + a]) /= sum + eps;
  }
}

// m = the iterate after `steps` normalisation steps (0: exp(logits − rowmax)).
template <class T>
DB_HD void sinkhorn_iterate(double* m, const T* logits, int n, int steps, double eps) {
  using std::exp;
  for (int i = 0; i < n; ++i) {
    double mx = logits[i * n];
    for (int j = 1; j < n; ++j)
      mx = double(logits[i * n + j]) > mx ? double(logits[i * n + j]) : mx;
    for (int j = 0; j < n; ++j) m[i * n + j] = exp(double(logits[i * n + j]) - mx);
  }
  for (int s = 0; s < steps; ++s) sinkhorn_step(m, n, s % 2 == 0, eps);
}

// out (n×n) = the normalised matrix; m: n² doubles of scratch.
template <class T>
DB_HD void sinkhorn_forward_row(T* out, const T* logits, int n, int iters, double eps, double* m) {
  sinkhorn_iterate(m, logits, n, 2 * iters, eps);
  for (int e = 0; e < n * n; ++e) out[e] = T(m[e]);
}

// dlogits (n×n, overwritten) from dout. trace: the 2·iters + 1 iterates (n² each), or null to
// recompute them; scratch: 3·n² doubles (g, and two iterates when recomputing).
template <class T>
DB_HD void sinkhorn_backward_row(T* dlogits, const T* dout, const T* logits, int n, int iters,
                                 double eps, const double* trace, double* scratch) {
  const int nn = n * n;
  double* g = scratch;
  double* in_buffer = scratch + nn;
  double* out_buffer = scratch + 2 * nn;
  for (int e = 0; e < nn; ++e) g[e] = dout[e];
  // Step s maps iterate s to iterate s + 1: y = x / (Σx + eps) along rows (s even) or columns,
  // so dx = (dy − Σ dy⊙y) / (Σx + eps) along the same line.
  for (int s = 2 * iters - 1; s >= 0; --s) {
    const double* in = trace ? trace + s * nn : in_buffer;
    const double* out = trace ? trace + (s + 1) * nn : out_buffer;
    if (!trace) {
      sinkhorn_iterate(in_buffer, logits, n, s, eps);
      for (int e = 0; e < nn; ++e) out_buffer[e] = in_buffer[e];
      sinkhorn_step(out_buffer, n, s % 2 == 0, eps);
    }
    const bool rows = s % 2 == 0;
    for (int a = 0; a < n; ++a) {
      double sum = 0, dot = 0;
      for (int b = 0; b < n; ++b) {
        const int at = rows ? a * n + b : b * n + a;
        sum += in[at], dot += g[at] * out[at];
      }
      for (int b = 0; b < n; ++b) {
        const int at = rows ? a * n + b : b * n + a;
        g[at] = (g[at] - dot) / (sum + eps);
      }
    }
  }
  // M0 = exp(l − rowmax(l)): dl_ij = g_ij·M0_ij, and the row max receives −Σ_j g_ij·M0_ij,
  // shared equally between tied maxima (torch.amax).
  const double* m0 = trace ? trace : in_buffer;
  if (!trace) sinkhorn_iterate(in_buffer, logits, n, 0, eps);
  for (int i = 0; i < n; ++i) {
    const T* l = logits + i * n;
    double mx = l[0], total = 0;
    for (int j = 1; j < n; ++j) mx = double(l[j]) > mx ? double(l[j]) : mx;
    int ties = 0;
    for (int j = 0; j < n; ++j) ties += double(l[j]) == mx;
    for (int j = 0; j < n; ++j) total += g[i * n + j] * m0[i * n + j];
    for (int j = 0; j < n; ++j)
      dlogits[i * n + j] =
          T(g[i * n + j] * m0[i * n + j] - (double(l[j]) == mx ? total / ties : 0.0));
  }
}

}  // namespace db::rows
