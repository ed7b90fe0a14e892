// 95% bootstrap intervals over sampled units (diagnostics.md "Uncertainty", §7): the units
// (windows or examples) are resampled with replacement B times with a fixed seed; a statistic
// of K values is recomputed on each resample and the 2.5th and 97.5th percentiles (linear
// interpolation between order statistics, NumPy's default) bound it. NaN statistics stay NaN.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

namespace db {

struct Interval {
  std::vector<double> low, high;
};

// The multiplicity of every unit in resample b of the stream keyed by `seed`: unit
// rng.below(units) is drawn `units` times, resample after resample (Rng(seed, "bootstrap")).
class BootstrapDraws {
 public:
  BootstrapDraws(int64_t units, int resamples, uint64_t seed);
  int resamples() const { return int(counts_.size()); }
  // counts[u] = how often unit u was drawn in resample b.
  const std::vector<int>& counts(int b) const { return counts_[b]; }

 private:
  std::vector<std::vector<int>> counts_;
};

// The percentile (q in [0, 1]) of the values, linearly interpolated; NaN when empty.
double percentile(std::vector<double> values, double q);

// Generic interval: statistic(counts, out) writes the K values of one resample into out.
// A value that is NaN in any resample yields NaN bounds.
Interval bootstrap_interval(const BootstrapDraws& draws, int K,
                            const std::function<void(const std::vector<int>&, double*)>& statistic);

// The common case: the statistic is a ratio of weighted sums over units,
// value_k = Σ_u numerator[u][k] / Σ_u denominator[u] (token-weighted means, Σ NLL / Σ tokens).
// numerator is [units × K] row-major.
Interval bootstrap_ratio(const BootstrapDraws& draws, int K, const std::vector<double>& numerator,
                         const std::vector<double>& denominator);

}  // namespace db
