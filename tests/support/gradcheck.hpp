// Finite-difference gradient checks in float64: central differences of a scalar function
// against the analytic gradient, reported as the largest relative error
// |g_fd − g| / max(|g_fd| + |g|, floor), floor at least 1e-4 of the largest gradient so that
// entries near zero do not turn rounding noise into large ratios.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "core/rng.hpp"

namespace db::test {

// n normal values times scale, as T.
template <class T = double>
std::vector<T> random_vector(size_t n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed);
  std::vector<T> v(n);
  for (T& x : v) x = T(rng.normal() * scale);
  return v;
}

// Largest |a − b| over max |b| (a holds as many values as b).
template <class T>
double max_relative_difference(const T* a, const std::vector<T>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return diff / scale;
}

// Checks up to `max_checks` entries of x (spread evenly) of d f / d x against `analytic`.
inline double max_relative_error(const std::function<double()>& f, std::vector<double>& x,
                                 const std::vector<double>& analytic, size_t max_checks = 64,
                                 double h = 1e-5, double floor = 1e-7) {
  double worst = 0;
  for (double g : analytic) floor = std::max(floor, 1e-4 * std::fabs(g));
  const size_t step = std::max<size_t>(1, x.size() / max_checks);
  for (size_t i = 0; i < x.size(); i += step) {
    const double saved = x[i];
    x[i] = saved + h;
    const double plus = f();
    x[i] = saved - h;
    const double minus = f();
    x[i] = saved;
    const double fd = (plus - minus) / (2 * h);
    worst = std::max(worst, std::fabs(fd - analytic[i]) /
                                std::max(std::fabs(fd) + std::fabs(analytic[i]), floor));
  }
  return worst;
}

// The same with the fourth-order central stencil (−f(x+2h) + 8f(x+h) − 8f(x−h) + f(x−2h))/12h:
// truncation O(h⁴) lets h be 100× larger, so the rounding of f (a few ulps of a loss of ~2,
// i.e. ~1e-11 absolute at h = 1e-5) no longer swamps the small gradients of deep or
// post-norm models.
inline double max_relative_error_fourth_order(const std::function<double()>& f,
                                              std::vector<double>& x,
                                              const std::vector<double>& analytic,
                                              size_t max_checks = 64, double h = 1e-3,
                                              double floor = 1e-7) {
  double worst = 0;
  for (double g : analytic) floor = std::max(floor, 1e-4 * std::fabs(g));
  const size_t step = std::max<size_t>(1, x.size() / max_checks);
  auto at = [&](size_t i, double offset) {
    const double saved = x[i];
    x[i] = saved + offset;
    const double value = f();
    x[i] = saved;
    return value;
  };
  for (size_t i = 0; i < x.size(); i += step) {
    const double fd = (-at(i, 2 * h) + 8 * at(i, h) - 8 * at(i, -h) + at(i, -2 * h)) / (12 * h);
    worst = std::max(worst, std::fabs(fd - analytic[i]) /
                                std::max(std::fabs(fd) + std::fabs(analytic[i]), floor));
  }
  return worst;
}

inline double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

}  // namespace db::test
