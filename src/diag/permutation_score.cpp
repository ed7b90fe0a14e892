// §3 Permutation score: P(i, j) = |ℒ_swap(i,j) − ℒ| / ℒ for every pair of blocks i < j, ℒ the
// token-weighted LM loss on the sampled windows. The baseline and the L(L−1)/2 swap passes are
// independent tasks dealt over the ranks.
#include <cmath>
#include <limits>

#include "diag/diagnostics.hpp"
#include "util/bootstrap.hpp"

namespace db::diag {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kThreshold = 0.15;

std::vector<std::pair<int, int>> block_pairs(int L) {
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i < L; ++i)
    for (int j = i + 1; j < L; ++j) pairs.push_back({i, j});
  return pairs;
}

// P and the per-layer means from the summed losses of the tasks (0 = baseline, 1 + p = pair p);
// the window weights are counts (a bootstrap resample) or all 1.
void scores(const std::vector<double>& losses, int64_t W, int L, const std::vector<int>* counts,
            double* matrix, double* per_layer) {
  const auto pairs = block_pairs(L);
  auto total = [&](size_t task) {
    double s = 0;
    for (int64_t w = 0; w < W; ++w) s += (counts ? (*counts)[w] : 1) * losses[task * W + w];
    return s;
  };
  const double base = total(0);
  for (int k = 0; k < L * L; ++k) matrix[k] = kNaN;
  std::vector<double> sum(L, 0.0);
  std::vector<int> n(L, 0);
  for (size_t p = 0; p < pairs.size(); ++p) {
    const auto [i, j] = pairs[p];
    const double v = std::fabs(total(1 + p) - base) / base;
    matrix[i * L + j] = v;
    sum[i] += v, sum[j] += v, ++n[i], ++n[j];
  }
  for (int l = 0; l < L; ++l) per_layer[l] = n[l] ? sum[l] / n[l] : kNaN;
}

std::vector<DiagnosticDataset> run(DiagContext& ctx) {
  const int L = ctx.n_layer();
  const int64_t W = ctx.settings.permutation_windows;
  const auto pairs = block_pairs(L);
  const int64_t tasks = 1 + int64_t(pairs.size());
  Backbone<float>& net = ctx.model.backbone();
  // Summed loss of window w under task t (the ratio of sums needs no target counts: every
  // window has the same number of targets).
  std::vector<double> losses(size_t(tasks) * W, 0.0);
  ctx.progress.set_local_total(ctx.my_count(tasks) * W);
  std::vector<int32_t> tokens;
  for (int64_t t = 0; t < tasks; ++t) {
    if (!ctx.mine(t)) continue;
    if (t > 0) net.swap_blocks(pairs[t - 1].first, pairs[t - 1].second);
    for (int64_t w = 0; w < W; ++w) {
      losses[size_t(t) * W + w] = ctx.window_loss(w, tokens);
      ctx.progress.step();
    }
    net.reset_schedule();
  }
  ctx.gather(losses);

  std::vector<double> matrix(L * L), per_layer(L);
  scores(losses, W, L, nullptr, matrix.data(), per_layer.data());
  const BootstrapDraws draws(W, ctx.settings.bootstrap, ctx.settings.seed);
  Interval ci =
      bootstrap_interval(draws, L * L + L, [&](const std::vector<int>& counts, double* out) {
        scores(losses, W, L, &counts, out, out + L * L);
      });
  double total = 0;
  for (const auto& [i, j] : pairs) total += matrix[i * L + j];
  const double targets = double(W) * (ctx.windows.window_len() - 1);
  double base = 0;
  for (int64_t w = 0; w < W; ++w) base += losses[w];

  DiagnosticDataset set = DiagnosticDataset::matrix("permutation_score", L, L, matrix);
  set.attributes["definition"] =
      "P(i,j) = |L_swap(i,j) - L| / L, L = token-weighted mean next-token loss on the windows, "
      "L_swap with the parameters of blocks i and j exchanged (diagnostics.md 3); rows i < "
      "columns j; NaN elsewhere";
  ctx.describe_windows(set, W);
  set.attributes["baseline_loss"] = base / targets;
  set.attributes["mean"] = pairs.empty() ? kNaN : total / double(pairs.size());
  set.attributes["late_share_above_0.15"] = late_share(matrix, L, kThreshold);
  set.attributes["late_share_definition"] =
      std::string("share of pairs (i,j) with floor(L/4) <= i < j whose P exceeds 0.15");
  std::vector<DiagnosticDataset> out = {set};
  add_interval(out, set, std::vector<double>(ci.low.begin(), ci.low.begin() + L * L),
               std::vector<double>(ci.high.begin(), ci.high.begin() + L * L));
  DiagnosticDataset layer = DiagnosticDataset::vector("permutation_score_per_layer", per_layer);
  layer.attributes["definition"] =
      std::string("mean of permutation_score over the pairs that contain the layer");
  ctx.describe_windows(layer, W);
  out.push_back(layer);
  add_interval(out, layer, std::vector<double>(ci.low.begin() + L * L, ci.low.end()),
               std::vector<double>(ci.high.begin() + L * L, ci.high.end()));
  return out;
}

}  // namespace

Diagnostic permutation_score_diagnostic() {
  Diagnostic d;
  d.name = "permutation_score";
  d.summary = "loss change when two blocks exchange places";
  d.options = {count_option("permutation-windows", "windows for permutation_score",
                            &DiagSettings::permutation_windows, 1)};
  d.datasets = {"permutation_score", "permutation_score_per_layer"};
  d.cost = [](const DiagScope& scope) {
    const int64_t W = scope.settings.permutation_windows, L = scope.n_layer;
    const int64_t pairs = L * (L - 1) / 2;
    return DiagCost{
        W * (1 + pairs), 0,
        std::to_string(W) + " windows x (1 baseline + " + std::to_string(pairs) + " swaps)"};
  };
  d.not_applicable = [](const DiagScope& scope) {
    return scope.n_layer < 2 ? std::string("needs at least 2 blocks") : std::string();
  };
  d.run = run;
  return d;
}

}  // namespace db::diag
