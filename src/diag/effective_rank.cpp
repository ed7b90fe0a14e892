#include "diag/effective_rank.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace db::diag {

std::vector<double> singular_values(const std::vector<double>& matrix, int n) {
  // One-sided Jacobi: rotate column pairs of U = A until all are orthogonal; the column norms
  // are then the singular values.
  std::vector<double> u = matrix;
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0;
    for (int p = 0; p < n - 1; ++p)
      for (int q = p + 1; q < n; ++q) {
        double alpha = 0, beta = 0, gamma = 0;
        for (int i = 0; i < n; ++i) {
          const double up = u[i * n + p], uq = u[i * n + q];
          alpha += up * up;
          beta += uq * uq;
          gamma += up * uq;
        }
        if (gamma == 0 || std::fabs(gamma) <= 1e-15 * std::sqrt(alpha * beta)) continue;
        off = std::max(off, std::fabs(gamma) / std::sqrt(alpha * beta));
        const double zeta = (beta - alpha) / (2 * gamma);
        const double t = std::copysign(1.0, zeta) / (std::fabs(zeta) + std::sqrt(1 + zeta * zeta));
        const double c = 1 / std::sqrt(1 + t * t), s = c * t;
        for (int i = 0; i < n; ++i) {
          const double up = u[i * n + p], uq = u[i * n + q];
          u[i * n + p] = c * up - s * uq;
          u[i * n + q] = s * up + c * uq;
        }
      }
    if (off <= 1e-15) break;
  }
  std::vector<double> sigma(n);
  for (int j = 0; j < n; ++j) {
    double norm = 0;
    for (int i = 0; i < n; ++i) norm += u[i * n + j] * u[i * n + j];
    sigma[j] = std::sqrt(norm);
  }
  std::sort(sigma.begin(), sigma.end(), std::greater<>());
  return sigma;
}

double effective_rank(const std::vector<double>& matrix, int n) {
  const std::vector<double> sigma = singular_values(matrix, n);
  double total = 0;
  for (double s : sigma) total += s;
  if (!(total > 0)) return std::numeric_limits<double>::quiet_NaN();
  double entropy = 0;
  for (double s : sigma) {
    const double p = s / total;
    if (p > 0) entropy -= p * std::log(p);
  }
  return std::exp(entropy);
}

std::vector<double> span_effective_ranks(const std::vector<const double*>& maps, int n) {
  const int K = int(maps.size());
  std::vector<double> ranks(size_t(K) * K, std::numeric_limits<double>::quiet_NaN());
  std::vector<double> product(n * n), next(n * n);
  for (int i = 0; i < K; ++i) {
    product.assign(maps[i], maps[i] + n * n);
    for (int j = i; j < K; ++j) {
      if (j > i) {
        const double* a = maps[j];
        for (int r = 0; r < n; ++r)
          for (int c = 0; c < n; ++c) {
            double sum = 0;
            for (int m = 0; m < n; ++m) sum += product[r * n + m] * a[m * n + c];
            next[r * n + c] = sum;
          }
        double largest = 0;
        for (double v : next) largest = std::max(largest, std::fabs(v));
        if (largest > 0)
          for (double& v : next) v /= largest;
        product.swap(next);
      }
      ranks[size_t(i) * K + j] = effective_rank(product, n);
    }
  }
  return ranks;
}

}  // namespace db::diag
