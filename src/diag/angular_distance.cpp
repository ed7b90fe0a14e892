// §1 Angular distance between depth states: d(i, j) = mean over tokens of arccos(cos(z_i, z_j))/π,
// cosines of fp32 unit vectors clamped to [−1, 1], sums in float64; all tokens and, as a second
// dataset, the last token of each window only (Gromov et al., arXiv 2403.17887).
#include <algorithm>
#include <cmath>
#include <limits>

#include "diag/diagnostics.hpp"
#include "util/bootstrap.hpp"

namespace db::diag {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// z → z/‖z‖ per token, in fp32 (the norm in float64); a zero vector stays zero.
void normalize_rows(std::vector<float>& state, int64_t rows, int width) {
  for (int64_t r = 0; r < rows; ++r) {
    float* z = state.data() + r * width;
    double norm = 0;
    for (int j = 0; j < width; ++j) norm += double(z[j]) * z[j];
    norm = std::sqrt(norm);
    const float inverse = norm > 0 ? float(1.0 / norm) : 0.0f;
    for (int j = 0; j < width; ++j) z[j] *= inverse;
  }
}

double angle(const float* a, const float* b, int width) {
  double dot = 0;
  for (int j = 0; j < width; ++j) dot += double(a[j]) * b[j];
  return std::acos(std::clamp(dot, -1.0, 1.0)) / M_PI;
}

std::vector<DiagnosticDataset> run(DiagContext& ctx) {
  const int L = ctx.n_layer(), S = L + 1;
  const int64_t W = ctx.settings.angular_windows;
  const int T = ctx.windows.window_len();
  // Per window: the token-mean distance of every pair, and the last token's.
  std::vector<double> all(size_t(W) * S * S, 0.0), last(size_t(W) * S * S, 0.0);
  std::vector<std::vector<float>> states(S);
  int width = 0;
  ForwardObserver<float> observer;
  observer.depth_state = [&](int l, const float* z, int64_t rows, int w) {
    width = w;
    states[l].assign(z, z + rows * w);
  };
  ObserverScope scope(ctx.model.backbone(), observer);
  ctx.progress.set_local_total(ctx.my_count(W));
  std::vector<int32_t> tokens;
  for (int64_t w = 0; w < W; ++w) {
    if (!ctx.mine(w)) continue;
    ctx.window_loss(w, tokens);
    for (auto& s : states) normalize_rows(s, T, width);
    double* a = all.data() + size_t(w) * S * S;
    double* b = last.data() + size_t(w) * S * S;
    for (int i = 0; i < S; ++i)
      for (int j = i + 1; j < S; ++j) {
        double sum = 0;
        for (int t = 0; t < T; ++t)
          sum += angle(states[i].data() + int64_t(t) * width, states[j].data() + int64_t(t) * width,
                       width);
        a[i * S + j] = sum / T;
        b[i * S + j] = angle(states[i].data() + int64_t(T - 1) * width,
                             states[j].data() + int64_t(T - 1) * width, width);
      }
    ctx.progress.step();
  }
  ctx.gather(all);
  ctx.gather(last);

  // Every window has T tokens, so the token mean is the mean of the window means.
  const std::vector<double> ones(W, 1.0);
  const BootstrapDraws draws(W, ctx.settings.bootstrap, ctx.settings.seed);
  std::vector<DiagnosticDataset> out;
  auto finish = [&](const std::vector<double>& per_window, const std::string& name,
                    const std::string& definition) {
    std::vector<double> value(S * S, 0.0);
    for (int64_t w = 0; w < W; ++w)
      for (int k = 0; k < S * S; ++k) value[k] += per_window[size_t(w) * S * S + k];
    Interval ci = bootstrap_ratio(draws, S * S, per_window, ones);
    for (int i = 0; i < S; ++i)
      for (int j = 0; j < S; ++j) {
        const int k = i * S + j;
        value[k] = j > i ? value[k] / W : (j == i ? 0.0 : kNaN);
        if (j <= i) ci.low[k] = ci.high[k] = value[k];
      }
    DiagnosticDataset set = DiagnosticDataset::matrix(name, S, S, value);
    set.attributes["definition"] = definition;
    ctx.describe_windows(set, W);
    set.attributes["tokens_per_window"] = int64_t(name == "angular_distance" ? T : 1);
    out.push_back(set);
    add_interval(out, set, ci.low, ci.high);
    return std::make_pair(value, ci);
  };
  const std::string common =
      "d(i,j) = mean arccos(cos(z_i, z_j))/pi over tokens, z_0 = embedding, z_{l+1} = output "
      "of block l (diagnostics.md 1); fp32 unit vectors, cosine clamped to [-1,1], float64 "
      "sums; rows i, columns j; 0 on the diagonal, NaN below";
  auto [value, ci] = finish(all, "angular_distance", common + "; all tokens");
  finish(last, "angular_distance_last_token", common + "; last token of each window only");

  // D[n][l] = d(l, l+n), NaN where l + n > L.
  std::vector<double> by_offset(S * S, kNaN), lo(S * S, kNaN), hi(S * S, kNaN);
  for (int n = 0; n < S; ++n)
    for (int l = 0; l + n < S; ++l) {
      by_offset[n * S + l] = value[l * S + l + n];
      lo[n * S + l] = ci.low[l * S + l + n];
      hi[n * S + l] = ci.high[l * S + l + n];
    }
  DiagnosticDataset set = DiagnosticDataset::matrix("angular_distance_by_offset", S, S, by_offset);
  set.attributes["definition"] =
      "D[n][l] = angular_distance[l][l+n] (diagnostics.md 1); NaN where l+n > L";
  ctx.describe_windows(set, W);
  out.push_back(set);
  add_interval(out, set, lo, hi);
  return out;
}

}  // namespace

Diagnostic angular_distance_diagnostic() {
  Diagnostic d;
  d.name = "angular_distance";
  d.summary = "angular distance between depth states (all tokens and last token)";
  d.options = {count_option("angular-windows", "windows for angular_distance",
                            &DiagSettings::angular_windows, 1)};
  d.datasets = {"angular_distance", "angular_distance_last_token", "angular_distance_by_offset"};
  d.cost = [](const DiagScope& scope) {
    const int64_t W = scope.settings.angular_windows;
    return DiagCost{W, 0, std::to_string(W) + " windows x 1 pass"};
  };
  d.not_applicable = [](const DiagScope&) { return std::string(); };
  d.run = run;
  return d;
}

}  // namespace db::diag
