#include "util/bootstrap.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace db {

BootstrapDraws::BootstrapDraws(int64_t units, int resamples, uint64_t seed) {
  DB_REQUIRE(units >= 1, "bootstrap needs at least one unit");
  DB_REQUIRE(resamples >= 1, "bootstrap needs at least one resample");
  Rng rng(seed, "bootstrap");
  counts_.assign(resamples, std::vector<int>(units, 0));
  for (auto& counts : counts_)
    for (int64_t i = 0; i < units; ++i) ++counts[rng.below(uint64_t(units))];
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const double position = q * double(values.size() - 1);
  const size_t below = size_t(std::floor(position));
  const size_t above = std::min(below + 1, values.size() - 1);
  const double fraction = position - double(below);
  return values[below] + fraction * (values[above] - values[below]);
}

Interval bootstrap_interval(
    const BootstrapDraws& draws, int K,
    const std::function<void(const std::vector<int>&, double*)>& statistic) {
  const int B = draws.resamples();
  std::vector<double> samples(size_t(B) * K);
  for (int b = 0; b < B; ++b) statistic(draws.counts(b), samples.data() + size_t(b) * K);
  Interval interval;
  interval.low.assign(K, std::numeric_limits<double>::quiet_NaN());
  interval.high = interval.low;
  std::vector<double> column(B);
  for (int k = 0; k < K; ++k) {
    bool finite = true;
    for (int b = 0; b < B; ++b) {
      column[b] = samples[size_t(b) * K + k];
      finite = finite && std::isfinite(column[b]);
    }
    if (!finite) continue;
    interval.low[k] = percentile(column, 0.025);
    interval.high[k] = percentile(column, 0.975);
  }
  return interval;
}

Interval bootstrap_ratio(const BootstrapDraws& draws, int K, const std::vector<double>& numerator,
                         const std::vector<double>& denominator) {
  const size_t units = denominator.size();
  DB_REQUIRE(numerator.size() == units * size_t(K), "bootstrap_ratio: sizes do not match");
  return bootstrap_interval(draws, K, [&](const std::vector<int>& counts, double* out) {
    double total = 0;
    std::fill(out, out + K, 0.0);
    for (size_t u = 0; u < units; ++u) {
      if (counts[u] == 0) continue;
      total += counts[u] * denominator[u];
      for (int k = 0; k < K; ++k) out[k] += counts[u] * numerator[u * K + k];
    }
    for (int k = 0; k < K; ++k) out[k] /= total;
  });
}

}  // namespace db
