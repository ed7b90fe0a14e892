#include "ops/cpu/rmsnorm.hpp"

#include <cmath>
#include <vector>

#include "core/parallel.hpp"

namespace db::cpu {

namespace {

// One row of each norm's forward, shared by the plain norms and the fused add + norm (the same
// bits: the same operations in the same order on the same values).
template <class T>
void rmsnorm_row(T* yr, T& rstd, const T* xr, const T* g, int d, double eps) {
  double sum_sq = 0;
  for (int j = 0; j < d; ++j) sum_sq += double(xr[j]) * xr[j];
  const T r = T(1.0 / std::sqrt(sum_sq / d + eps));
  rstd = r;
  for (int j = 0; j < d; ++j) yr[j] = (g ? g[j] : T(1)) * xr[j] * r;
}

template <class T>
void layernorm_row(T* yr, T& mean, T& rstd, const T* xr, const T* g, int d, double eps) {
  double sum = 0;
  for (int j = 0; j < d; ++j) sum += xr[j];
  const double mu = sum / d;
  double var = 0;
  for (int j = 0; j < d; ++j) var += (xr[j] - mu) * (xr[j] - mu);
  const double r = 1.0 / std::sqrt(var / d + eps);
  mean = T(mu);
  rstd = T(r);
  for (int j = 0; j < d; ++j) yr[j] = T((g ? g[j] : T(1)) * (xr[j] - mu) * r);
}

// sum_r = alpha·x_r + branch_r, element by element, as axpby rounds it: alpha·x + 1·branch in
// its general case (alpha = 1: exactly branch + x, its add). Reads branch[j] before writing
// sum[j], so sum may be branch.
template <class T>
void add_row(T* sum, const T* x, const T* branch, T alpha, int d) {
  for (int j = 0; j < d; ++j) sum[j] = alpha * x[j] + branch[j];
}

}  // namespace

template <class T>
void rmsnorm_forward(T* y, T* rstd, const T* x, const T* g, int64_t N, int d, double eps) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) rmsnorm_row(y + n * d, rstd[n], x + n * d, g, d, eps);
}

// Row by row, so that the norm reads the sum just written from the cache, not from memory.
template <class T>
void add_rmsnorm_forward(T* sum, T* y, T* rstd, const T* x, const T* branch, T alpha, const T* g,
                         int64_t N, int d, double eps) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    add_row(sum + n * d, x + n * d, branch + n * d, alpha, d);
    rmsnorm_row(y + n * d, rstd[n], sum + n * d, g, d, eps);
  }
}

template <class T>
void rmsnorm_backward(T* dx, T* dg, const T* dy, const T* x, const T* g, const T* rstd, int64_t N,
                      int d, bool accumulate_dx) {
  const int64_t chunks = chunk_count(N);
  std::vector<double> dg_partial(dg ? chunks * d : 0, 0.0);
  for_each_row_chunk(N, [&](int64_t c, int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const T* xr = x + n * d;
      const T* dyr = dy + n * d;
      const double r = rstd[n];
      // dx = r·(g⊙dy) − r³/d · x · Σ(g⊙dy⊙x)
      double dot = 0;
      for (int j = 0; j < d; ++j) dot += double(g ? g[j] : T(1)) * dyr[j] * xr[j];
      const double coef = r * r * r * dot / d;
      T* dxr = dx + n * d;
      for (int j = 0; j < d; ++j) {
        const T v = T(r * (g ? g[j] : T(1)) * dyr[j] - coef * xr[j]);
        dxr[j] = accumulate_dx ? dxr[j] + v : v;
      }
      if (dg) {
        double* part = &dg_partial[c * d];
        for (int j = 0; j < d; ++j) part[j] += double(dyr[j]) * xr[j] * r;
      }
    }
  });
  if (dg) add_chunk_partials(dg, dg_partial, chunks, d);
}

template <class T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* g, int64_t N, int d,
                       double eps) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) layernorm_row(y + n * d, mean[n], rstd[n], x + n * d, g, d, eps);
}

template <class T>
void add_layernorm_forward(T* sum, T* y, T* mean, T* rstd, const T* x, const T* branch, T alpha,
                           const T* g, int64_t N, int d, double eps) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    add_row(sum + n * d, x + n * d, branch + n * d, alpha, d);
    layernorm_row(y + n * d, mean[n], rstd[n], sum + n * d, g, d, eps);
  }
}

template <class T>
void layernorm_backward(T* dx, T* dg, const T* dy, const T* x, const T* g, const T* mean,
                        const T* rstd, int64_t N, int d, bool accumulate_dx) {
  const int64_t chunks = chunk_count(N);
  std::vector<double> dg_partial(dg ? chunks * d : 0, 0.0);
  for_each_row_chunk(N, [&](int64_t c, int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      const T* xr = x + n * d;
      const T* dyr = dy + n * d;
      const double mu = mean[n], r = rstd[n];
      // With x̂ = (x−μ)·r and ĝ = g⊙dy: dx = r·(ĝ − mean(ĝ) − x̂·mean(ĝ⊙x̂)).
      double sum_gdy = 0, sum_gdy_xhat = 0;
      for (int j = 0; j < d; ++j) {
        const double gdy = double(g ? g[j] : T(1)) * dyr[j];
        sum_gdy += gdy;
        sum_gdy_xhat += gdy * (xr[j] - mu) * r;
      }
      T* dxr = dx + n * d;
      for (int j = 0; j < d; ++j) {
        const double xhat = (xr[j] - mu) * r;
        const double gdy = double(g ? g[j] : T(1)) * dyr[j];
        const T v = T(r * (gdy - sum_gdy / d - xhat * sum_gdy_xhat / d));
        dxr[j] = accumulate_dx ? dxr[j] + v : v;
      }
      if (dg) {
        double* part = &dg_partial[c * d];
        for (int j = 0; j < d; ++j) part[j] += double(dyr[j]) * (xr[j] - mu) * r;
      }
    }
  });
  if (dg) add_chunk_partials(dg, dg_partial, chunks, d);
}

#define DB_INSTANTIATE(T)                                                                          \
  template void rmsnorm_forward<T>(T*, T*, const T*, const T*, int64_t, int, double);              \
  template void rmsnorm_backward<T>(T*, T*, const T*, const T*, const T*, const T*, int64_t, int,  \
                                    bool);                                                         \
  template void layernorm_forward<T>(T*, T*, T*, const T*, const T*, int64_t, int, double);        \
  template void add_rmsnorm_forward<T>(T*, T*, T*, const T*, const T*, T, const T*, int64_t, int,  \
                                       double);                                                    \
  template void add_layernorm_forward<T>(T*, T*, T*, T*, const T*, const T*, T, const T*, int64_t, \
                                         int, double);                                             \
  template void layernorm_backward<T>(T*, T*, const T*, const T*, const T*, const T*, const T*,    \
                                      int64_t, int, bool);
DB_INSTANTIATE(float)
DB_INSTANTIATE(double)
#undef DB_INSTANTIATE

}  // namespace db::cpu
