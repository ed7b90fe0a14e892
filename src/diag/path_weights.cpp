// §4 Residual path weights through the design's own hooks: path_weights() (HC/mHC composed
// weights, AttnRes depth-softmax weights, 1 for a single residual stream), the stream maps of
// StreamMixingSource designs for the effective rank of composed residual maps (HC: A_i⋯A_j;
// mHC: the transport H_res,j⋯H_res,i — same singular values as its transpose), and
// partial_sum_weights() for the Block AttnRes dead segment. Averaged over tokens; the windows
// are dealt over the ranks.
#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "diag/diagnostics.hpp"
#include "diag/effective_rank.hpp"
#include "model/residual/stream_mixing.hpp"
#include "util/bootstrap.hpp"

namespace db::diag {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Mean over windows (equal tokens per window = the token mean); NaN entries stay NaN.
std::vector<double> window_mean(const std::vector<double>& per_window, int64_t W, size_t K) {
  std::vector<double> mean(K, 0.0);
  for (int64_t w = 0; w < W; ++w)
    for (size_t k = 0; k < K; ++k) mean[k] += per_window[size_t(w) * K + k];
  for (double& m : mean) m /= double(W);
  return mean;
}

std::vector<DiagnosticDataset> run(DiagContext& ctx) {
  const int L = ctx.n_layer(), K = 2 * L;
  const int64_t W = ctx.settings.path_windows;
  ResidualDesign<float>& design = ctx.model.design();
  Backbone<float>& net = ctx.model.backbone();
  const auto* stream_source = dynamic_cast<const StreamMixingSource*>(&design);
  const int n = stream_source ? stream_source->stream_mixing().n : 1;
  const size_t P = size_t(K + 1) * (K + 1);
  std::vector<double> weights(size_t(W) * P, 0.0);
  std::vector<double> ranks(n > 1 ? size_t(W) * K * K : 0, 0.0);
  std::vector<double> partial;  // per window, 2L values, when the design has a partial sum
  bool has_partial = false;
  ctx.progress.set_local_total(ctx.my_count(W));
  std::vector<int32_t> tokens;
  for (int64_t w = 0; w < W; ++w) {
    if (!ctx.mine(w)) continue;
    ctx.window_loss(w, tokens);
    const std::vector<double> pw = design.path_weights(net);
    DB_REQUIRE(pw.size() == P, "design " + ctx.model.config().arch + ": path_weights() returned " +
                                   std::to_string(pw.size()) +
                                   " values, expected (2L+1)^2 = " + std::to_string(P));
    std::copy(pw.begin(), pw.end(), weights.begin() + size_t(w) * P);
    if (n > 1) {
      const StreamMixing mixing = stream_source->stream_mixing();
      DB_REQUIRE(mixing.sublayers == K,
                 "design " + ctx.model.config().arch + ": stream maps must cover every sublayer");
      const int64_t rows = mixing.tokens;
      std::vector<double> sum(size_t(K) * K, 0.0);
      // M_k maps the state forward (new = M_k·state); the transposes composed left to right,
      // M_iᵀ⋯M_jᵀ = (M_j⋯M_i)ᵀ, have the singular values of the transport from i to j.
      std::vector<std::vector<double>> transposed(K, std::vector<double>(n * n));
      std::vector<const double*> maps(K);
      for (int64_t r = 0; r < rows; ++r) {
        for (int k = 0; k < K; ++k) {
          const double* m = mixing.map(k, r);
          for (int a = 0; a < n; ++a)
            for (int b = 0; b < n; ++b) transposed[k][b * n + a] = m[a * n + b];
          maps[k] = transposed[k].data();
        }
        const std::vector<double> token = span_effective_ranks(maps, n);
        for (size_t k = 0; k < token.size(); ++k) sum[k] += token[k];
      }
      for (size_t k = 0; k < sum.size(); ++k) ranks[size_t(w) * K * K + k] = sum[k] / rows;
    }
    const std::vector<double> ps = design.partial_sum_weights(net);
    if (!ps.empty()) {
      DB_REQUIRE(int(ps.size()) == K, "partial_sum_weights() must give one value per sublayer");
      if (partial.empty()) partial.assign(size_t(W) * K, 0.0);
      std::copy(ps.begin(), ps.end(), partial.begin() + size_t(w) * K);
    }
    ctx.progress.step();
  }
  ctx.gather(weights);
  ctx.gather(ranks);
  // Whether the design reports partial sums does not depend on the rank's windows.
  has_partial = ctx.comm.allreduce_max(partial.empty() ? 0.0 : 1.0) > 0;
  if (has_partial) {
    if (partial.empty()) partial.assign(size_t(W) * K, 0.0);
    ctx.gather(partial);
  }

  const BootstrapDraws draws(W, ctx.settings.bootstrap, ctx.settings.seed);
  const std::vector<double> ones(W, 1.0);
  std::vector<DiagnosticDataset> out;
  {
    DiagnosticDataset set =
        DiagnosticDataset::matrix("path_weights", K + 1, K + 1, window_mean(weights, W, P));
    set.attributes["definition"] =
        "token-mean residual path weight from source (rows: embedding, then sublayer outputs "
        "0..2L-1) to consumer (columns: sublayer inputs 0..2L-1, then the readout), from the "
        "design's path_weights() (diagnostics.md 4); NaN where the source is not earlier";
    set.attributes["design"] = ctx.model.config().arch;
    ctx.describe_windows(set, W);
    out.push_back(set);
    const Interval ci = bootstrap_ratio(draws, int(P), weights, ones);
    add_interval(out, set, ci.low, ci.high);
  }
  if (n > 1) {
    std::vector<double> mean = window_mean(ranks, W, size_t(K) * K);
    double total = 0;
    int count = 0;
    for (double v : mean)
      if (std::isfinite(v)) total += v, ++count;
    DiagnosticDataset set = DiagnosticDataset::matrix("effective_rank", K, K, mean);
    set.attributes["definition"] =
        "Roy-Vetterli effective rank exp(H(sigma/sum sigma)) of the composed stream map "
        "A_i...A_j (HC) / H_res,i...H_res,j (mHC) for sublayers i (rows) <= j (columns), per "
        "token then averaged; SVD in float64 (diagnostics.md 4); NaN for j < i";
    set.attributes["streams"] = int64_t(n);
    set.attributes["mean"] = count ? total / count : kNaN;
    ctx.describe_windows(set, W);
    out.push_back(set);
    const Interval ci = bootstrap_ratio(draws, K * K, ranks, ones);
    add_interval(out, set, ci.low, ci.high);
  }
  if (has_partial) {
    const std::vector<double> mean = window_mean(partial, W, K);
    // A layer is dead while every one of its mixes that has a partial sum gives it less than
    // the threshold (a sublayer without a partial sum re-reads earlier sources anyway).
    int64_t dead = 0;
    for (int l = 0; l < L; ++l) {
      bool below = true;
      for (int k = 2 * l; k < 2 * l + 2; ++k)
        if (std::isfinite(mean[k]) && mean[k] >= ctx.settings.dead_threshold) below = false;
      if (!below) break;
      ++dead;
    }
    DiagnosticDataset set = DiagnosticDataset::scalar("dead_segment", double(dead));
    set.integer = true;
    set.attributes["definition"] =
        "number of leading layers whose depth mixes give the running partial sum a token-mean "
        "weight below the threshold (Block AttnRes, diagnostics.md 4)";
    set.attributes["layers"] = dead;
    set.attributes["threshold"] = ctx.settings.dead_threshold;
    ctx.describe_windows(set, W);
    out.push_back(set);
    DiagnosticDataset weights_set = DiagnosticDataset::vector("partial_sum_weight", mean);
    weights_set.attributes["definition"] = std::string(
        "token-mean depth-softmax weight on the running partial sum per sublayer "
        "input 0..2L-1 (NaN: no partial sum)");
    ctx.describe_windows(weights_set, W);
    out.push_back(weights_set);
  }
  return out;
}

}  // namespace

Diagnostic path_weights_diagnostic() {
  Diagnostic d;
  d.name = "path_weights";
  d.summary = "residual path weights, effective rank of stream maps, dead segment";
  d.options = {
      count_option("path-windows", "windows for path_weights (and effective rank)",
                   &DiagSettings::path_windows, 1),
      fraction_option("dead-threshold", "Block AttnRes dead segment: partial-sum weight threshold",
                      &DiagSettings::dead_threshold)};
  d.datasets = {"path_weights", "effective_rank", "dead_segment", "partial_sum_weight"};
  d.cost = [](const DiagScope& scope) {
    const int64_t W = scope.settings.path_windows;
    return DiagCost{W, 0, std::to_string(W) + " windows x 1 pass"};
  };
  d.not_applicable = [](const DiagScope&) { return std::string(); };
  d.run = run;
  d.needs_design_internals = true;
  return d;
}

}  // namespace db::diag
