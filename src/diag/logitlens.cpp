// §6 LogitLens: every depth state z_l, l = 0..L, decoded through the design's readout (final
// norm; the stream reduction for HC/mHC) and the LM head: p_l. Per depth, means over all
// predicted tokens of the early-exit cross-entropy, KL(p_final ‖ p_l) (the paper's direction),
// KL(p_l ‖ p_final) and the top-5 overlap with p_final. Log-softmax in float64.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <numeric>

#include "diag/diagnostics.hpp"
#include "util/bootstrap.hpp"

namespace db::diag {
namespace {

enum Statistic { kCe, kKl, kKlReverse, kTop5, kStatistics };
// The datasets, one per statistic, in the order of the per-window values.
const char* const kStatisticNames[kStatistics] = {"logitlens_ce", "logitlens_kl",
                                                  "logitlens_kl_reverse", "logitlens_top5_overlap"};

void log_softmax(const float* logits, int V, double* out) {
  double largest = logits[0];
  for (int v = 1; v < V; ++v) largest = std::max<double>(largest, logits[v]);
  double sum = 0;
  for (int v = 0; v < V; ++v) sum += std::exp(double(logits[v]) - largest);
  const double lse = largest + std::log(sum);
  for (int v = 0; v < V; ++v) out[v] = double(logits[v]) - lse;
}

// The five largest entries (ties to the lower id).
std::array<int, 5> top5(const double* logp, int V) {
  std::vector<int> ids(V);
  std::iota(ids.begin(), ids.end(), 0);
  const int k = std::min(5, V);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [logp](int a, int b) {
    return logp[a] > logp[b] || (logp[a] == logp[b] && a < b);
  });
  std::array<int, 5> top{-1, -1, -1, -1, -1};
  std::copy(ids.begin(), ids.begin() + k, top.begin());
  return top;
}

std::vector<DiagnosticDataset> run(DiagContext& ctx) {
  const int L = ctx.n_layer(), S = L + 1;
  const int64_t W = ctx.settings.logitlens_windows;
  const int T = ctx.windows.window_len();
  const int V = ctx.model.config().vocab_size;
  Backbone<float>& net = ctx.model.backbone();
  // per_window[w][statistic][l]: window means over the T−1 predicted tokens.
  std::vector<double> per_window(size_t(W) * kStatistics * S, 0.0);
  std::vector<std::vector<float>> states(S);
  int width = 0;
  ForwardObserver<float> observer;
  observer.depth_state = [&](int l, const float* z, int64_t rows, int w) {
    width = w;
    states[l].assign(z, z + rows * w);
  };
  ctx.progress.set_local_total(ctx.my_count(W));
  std::vector<int32_t> tokens;
  std::vector<float> final_logits, logits(size_t(T) * V);
  std::vector<double> logp_final(size_t(T) * V), logp(V);
  for (int64_t w = 0; w < W; ++w) {
    if (!ctx.mine(w)) continue;
    ctx.windows.read(w, tokens);
    {
      ObserverScope scope(net, observer);
      ctx.model.logits(tokens.data(), 1, T, final_logits);
    }
    std::vector<std::array<int, 5>> final_top(T);
    for (int t = 0; t + 1 < T; ++t) {
      log_softmax(final_logits.data() + size_t(t) * V, V, logp_final.data() + size_t(t) * V);
      final_top[t] = top5(logp_final.data() + size_t(t) * V, V);
    }
    double* stats = per_window.data() + size_t(w) * kStatistics * S;
    for (int l = 0; l < S; ++l) {
      ctx.model.readout_logits(states[l].data(), T, width, logits);
      double ce = 0, kl = 0, kl_reverse = 0, overlap = 0;
      for (int t = 0; t + 1 < T; ++t) {
        log_softmax(logits.data() + size_t(t) * V, V, logp.data());
        const double* f = logp_final.data() + size_t(t) * V;
        ce -= logp[tokens[t + 1]];
        for (int v = 0; v < V; ++v) {
          kl += std::exp(f[v]) * (f[v] - logp[v]);
          kl_reverse += std::exp(logp[v]) * (logp[v] - f[v]);
        }
        const std::array<int, 5> top = top5(logp.data(), V);
        int shared = 0;
        for (int a : top)
          for (int b : final_top[t]) shared += a >= 0 && a == b;
        overlap += shared / 5.0;
      }
      const double n = T - 1;
      stats[kCe * S + l] = ce / n;
      stats[kKl * S + l] = kl / n;
      stats[kKlReverse * S + l] = kl_reverse / n;
      stats[kTop5 * S + l] = overlap / n;
    }
    ctx.progress.step();
  }
  ctx.gather(per_window);

  const BootstrapDraws draws(W, ctx.settings.bootstrap, ctx.settings.seed);
  const Interval ci =
      bootstrap_ratio(draws, kStatistics * S, per_window, std::vector<double>(W, 1.0));
  const char* definitions[kStatistics] = {
      "early-exit cross-entropy of p_l against the next token",
      "KL(p_final || p_l), final first (the paper's direction)",
      "KL(p_l || p_final), the reverse direction (a labelled extra)",
      "|top5(p_l) & top5(p_final)| / 5"};
  std::vector<DiagnosticDataset> out;
  for (int s = 0; s < kStatistics; ++s) {
    std::vector<double> value(S, 0.0), low(ci.low.begin() + s * S, ci.low.begin() + (s + 1) * S),
        high(ci.high.begin() + s * S, ci.high.begin() + (s + 1) * S);
    for (int64_t w = 0; w < W; ++w)
      for (int l = 0; l < S; ++l) value[l] += per_window[(size_t(w) * kStatistics + s) * S + l];
    for (double& v : value) v /= double(W);
    DiagnosticDataset set = DiagnosticDataset::vector(kStatisticNames[s], value);
    set.attributes["definition"] =
        std::string(definitions[s]) +
        "; p_l = softmax(LM head(readout(z_l))), z_l depth state l = 0..L, readout = the "
        "design's final norm (and stream reduction); mean over the T-1 predicted tokens of "
        "every window (diagnostics.md 6); log-softmax in float64";
    ctx.describe_windows(set, W);
    out.push_back(set);
    add_interval(out, set, low, high);
  }
  return out;
}

}  // namespace

Diagnostic logitlens_diagnostic() {
  Diagnostic d;
  d.name = "logitlens";
  d.summary = "LogitLens: early-exit CE, KL both ways, top-5 overlap per depth";
  d.options = {count_option("logitlens-windows", "windows for logitlens",
                            &DiagSettings::logitlens_windows, 1)};
  d.datasets.assign(std::begin(kStatisticNames), std::end(kStatisticNames));
  d.cost = [](const DiagContext& ctx) {
    const int64_t W = ctx.settings.logitlens_windows;
    return std::make_pair(W, std::to_string(W) + " windows x 1 pass (+ " +
                                 std::to_string(ctx.n_layer() + 1) + " head decodes each)");
  };
  d.not_applicable = [](const DiagContext&) { return std::string(); };
  d.run = run;
  return d;
}

}  // namespace db::diag
