// Sinkhorn normalisation of each token's n×n matrix (mHC, §8), in double whatever T: the row
// math, and DB_HD functors launched through ops/launch.hpp (one token each) so that the CPU loop
// and the CUDA kernel run the same body:
// M = exp(logits − rowmax), then `iters` × { rows ← rows / (rowsum + eps); columns ← columns /
// (colsum + eps) }. The backward differentiates through every step and through the row max
// (like torch.amax: the gradient is shared equally between tied maxima). It reads the forward
// iterates from a trace on the host, or recomputes each from the logits on the GPU (which cannot
// hold 2·iters + 1 matrices per thread): the same operations in the same order, so both give the
// same bits (tests/ops/sinkhorn_rows_test.cpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/host_device.hpp"
#include "ops/launch.hpp"

namespace db {

struct SinkhornShape {
  int64_t count;  // number of n×n matrices (one per token)
  int n;
  int iters;
  double eps;
};

// A token's matrix and scratch live in the thread's own (local) memory: n ≤ 16. The functors
// below are compiled for a capacity of 4, 8 or 16 streams and the smallest that holds n runs:
// a GPU reserves a kernel's local memory for every thread it can hold (≈ 1.6 GiB on an H200
// for the 6 KiB backward scratch of 16 streams; 0.1 GiB for the default 4).
constexpr int kMaxSinkhornN = 16;

namespace sinkhorn_rows {

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

// One token of the forward, for n ≤ N.
template <class T, int N>
struct SinkhornForward {
  T* out;
  const T* logits;
  int n, iters;
  double eps;
  DB_HD void operator()(int64_t r) const {
    double m[N * N];
    const int64_t nn = int64_t(n) * n;
    sinkhorn_forward_row(out + r * nn, logits + r * nn, n, iters, eps, m);
  }
};

// One token of the backward, for n ≤ N: the host keeps the trace of iterates, the device
// recomputes them.
template <class T, int N>
struct SinkhornBackward {
  T* dlogits;
  const T *dout, *logits;
  int n, iters;
  double eps;
  DB_HD void operator()(int64_t r) const {
    const int nn = n * n;
    double scratch[3 * N * N];
    const double* trace = nullptr;
#if !defined(__CUDA_ARCH__)
    const int iterates = 2 * iters + 1;
    std::vector<double> kept(size_t(iterates) * nn);
    sinkhorn_iterate(kept.data(), logits + r * nn, n, 0, eps);
    for (int k = 0; k + 1 < iterates; ++k) {
      for (int e = 0; e < nn; ++e) kept[size_t(k + 1) * nn + e] = kept[size_t(k) * nn + e];
      sinkhorn_step(&kept[size_t(k + 1) * nn], n, k % 2 == 0, eps);
    }
    trace = kept.data();
#endif
    sinkhorn_backward_row(dlogits + r * nn, dout + r * nn, logits + r * nn, n, iters, eps, trace,
                          scratch);
  }
};

// Runs Functor<N>{args...} over `count` tokens for the smallest capacity N of 4, 8, 16 that
// holds n.
template <template <int> class Functor, class... Args>
void for_each_token_within_capacity(MemorySpace space, int64_t count, int n, Args... args) {
  DB_REQUIRE(n >= 1 && n <= kMaxSinkhornN, "Sinkhorn: n must be in [1, 16]");
  if (n <= 4)
    for_each_index(space, count, Functor<4>{args...});
  else if (n <= 8)
    for_each_index(space, count, Functor<8>{args...});
  else
    for_each_index(space, count, Functor<kMaxSinkhornN>{args...});
}

template <class T>
struct ForwardOf {
  template <int N>
  using type = SinkhornForward<T, N>;
};
template <class T>
struct BackwardOf {
  template <int N>
  using type = SinkhornBackward<T, N>;
};

}  // namespace sinkhorn_rows

// out = Sinkhorn(logits) per token.
template <class T>
void sinkhorn_forward(MemorySpace space, T* out, const T* logits, const SinkhornShape& s) {
  sinkhorn_rows::for_each_token_within_capacity<sinkhorn_rows::ForwardOf<T>::template type>(
      space, s.count, s.n, out, logits, s.n, s.iters, s.eps);
}

// dlogits (overwritten) from dout.
template <class T>
void sinkhorn_backward(MemorySpace space, T* dlogits, const T* dout, const T* logits,
                       const SinkhornShape& s) {
  sinkhorn_rows::for_each_token_within_capacity<sinkhorn_rows::BackwardOf<T>::template type>(
      space, s.count, s.n, dlogits, dout, logits, s.n, s.iters, s.eps);
}

}  // namespace db
