// §2 Causal score (after Csordás et al., arXiv 2505.13898): how much skipping block s changes
// the update u_l = z_{l+1} − z_l of every later block l,
// C(s, l) = mean over tokens of ‖u_l^{skip s} − u_l‖₂ / max(‖u_l‖₂, 1e-8).
// The L−1 skip passes per window are independent: they are dealt over the ranks, each rank
// recomputing the baseline updates of the windows it visits.
#include <algorithm>
#include <cmath>
#include <limits>

#include "diag/diagnostics.hpp"
#include "util/bootstrap.hpp"

namespace db::diag {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kThreshold = 0.45;

std::vector<DiagnosticDataset> run(DiagContext& ctx) {
  const int L = ctx.n_layer();
  const int64_t W = ctx.settings.causal_windows;
  Backbone<float>& net = ctx.model.backbone();
  // per_window[w][s][l]: the token-mean ratio of window w.
  std::vector<double> per_window(size_t(W) * L * L, 0.0);
  std::vector<std::vector<float>> base(L);  // baseline updates u_l of the current window
  std::vector<float> previous;
  int width = 0;
  int skipped = -1;  // -1: the baseline pass
  double* row = nullptr;
  ForwardObserver<float> observer;
  observer.depth_state = [&](int l, const float* z, int64_t rows, int w) {
    width = w;
    const int64_t count = rows * w;
    if (l > 0) {
      const int block = l - 1;
      if (skipped < 0) {
        base[block].resize(count);
        for (int64_t k = 0; k < count; ++k) base[block][k] = z[k] - previous[k];
      } else if (block > skipped) {
        double sum = 0;
        for (int64_t r = 0; r < rows; ++r) {
          double diff = 0, norm = 0;
          for (int j = 0; j < w; ++j) {
            const int64_t k = r * w + j;
            const double u = base[block][k];
            const double u_skip = double(z[k] - previous[k]);
            diff += (u_skip - u) * (u_skip - u);
            norm += u * u;
          }
          sum += std::sqrt(diff) / std::max(std::sqrt(norm), 1e-8);
        }
        row[block] = sum / double(rows);
      }
    }
    previous.assign(z, z + count);
  };
  ObserverScope scope(net, observer);
  const int64_t my_skips = ctx.my_count(L - 1);
  ctx.progress.set_local_total(my_skips > 0 ? W * (1 + my_skips) : 0);
  std::vector<int32_t> tokens;
  if (my_skips > 0)
    for (int64_t w = 0; w < W; ++w) {
      skipped = -1;
      ctx.window_loss(w, tokens);
      ctx.progress.step();
      for (int s = 0; s + 1 < L; ++s) {
        if (!ctx.mine(s)) continue;
        skipped = s;
        row = per_window.data() + (size_t(w) * L + s) * L;
        net.skip_block(s);
        ctx.window_loss(w, tokens);
        net.reset_schedule();
        ctx.progress.step();
      }
    }

  ctx.gather(per_window);

  std::vector<double> value(L * L, kNaN);
  double total = 0, largest = -1;
  int pairs = 0;
  for (int s = 0; s < L; ++s)
    for (int l = s + 1; l < L; ++l) {
      double sum = 0;
      for (int64_t w = 0; w < W; ++w) sum += per_window[(size_t(w) * L + s) * L + l];
      value[s * L + l] = sum / W;
      total += value[s * L + l];
      largest = std::max(largest, value[s * L + l]);
      ++pairs;
    }
  const BootstrapDraws draws(W, ctx.settings.bootstrap, ctx.settings.seed);
  Interval ci = bootstrap_ratio(draws, L * L, per_window, std::vector<double>(W, 1.0));
  for (int s = 0; s < L; ++s)
    for (int l = 0; l <= s; ++l) ci.low[s * L + l] = ci.high[s * L + l] = kNaN;

  DiagnosticDataset set = DiagnosticDataset::matrix("causal_score", L, L, value);
  set.attributes["definition"] =
      "C(s,l) = mean over tokens of ||u_l^{skip s} - u_l||_2 / max(||u_l||_2, 1e-8), "
      "u_l = z_{l+1} - z_l (diagnostics.md 2, after Csordas et al. 2505.13898); rows s = "
      "skipped block, columns l = later block; NaN where l <= s";
  ctx.describe_windows(set, W);
  set.attributes["mean"] = pairs ? total / pairs : kNaN;
  set.attributes["max"] = pairs ? largest : kNaN;
  set.attributes["late_share_above_0.45"] = late_share(value, L, kThreshold);
  set.attributes["late_share_definition"] =
      std::string("share of pairs (s,l) with floor(L/4) <= s < l whose C exceeds 0.45");
  std::vector<DiagnosticDataset> out = {set};
  add_interval(out, set, ci.low, ci.high);
  return out;
}

}  // namespace

double late_share(const std::vector<double>& matrix, int n, double threshold) {
  int64_t total = 0, above = 0;
  for (int i = n / 4; i < n; ++i)
    for (int j = i + 1; j < n; ++j) {
      const double v = matrix[size_t(i) * n + j];
      if (!std::isfinite(v)) continue;
      ++total;
      above += v > threshold;
    }
  return total ? double(above) / double(total) : kNaN;
}

Diagnostic causal_score_diagnostic() {
  Diagnostic d;
  d.name = "causal_score";
  d.summary = "causal score matrix from single-block skips";
  d.options = {
      count_option("causal-windows", "windows for causal_score", &DiagSettings::causal_windows, 1)};
  d.datasets = {"causal_score"};
  d.cost = [](const DiagScope& scope) {
    const int64_t W = scope.settings.causal_windows, L = scope.n_layer;
    return DiagCost{W * L, 0,
                    std::to_string(W) + " windows x (1 baseline + " + std::to_string(L - 1) +
                        " skips); each rank repeats the baselines of its windows"};
  };
  d.not_applicable = [](const DiagScope& scope) {
    return scope.n_layer < 2 ? std::string("needs at least 2 blocks") : std::string();
  };
  d.run = run;
  return d;
}

}  // namespace db::diag
