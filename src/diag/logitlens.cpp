// §6 LogitLens: every depth state z_l, l = 0..L, decoded through the design's readout (final
// norm; the stream reduction for HC/mHC) and the LM head: p_l. Per depth, means over all
// predicted tokens of the early-exit cross-entropy, KL(p_final ‖ p_l) (the paper's direction),
// KL(p_l ‖ p_final) and the top-5 overlap with p_final. Log-softmax in float64.
#include <algorithm>
#include <array>
#include <chrono>
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

// One window's final distribution, against which each depth state is compared.
struct FinalDistribution {
  std::vector<int32_t> tokens;
  std::vector<double> logp;  // [T, V]
  std::vector<std::array<int, 5>> top;
};

// Runs window w, the observer seeing every depth state, and returns its final distribution.
FinalDistribution forward_window(DiagContext& ctx, ForwardObserver<float>& observer, int64_t w) {
  const int T = ctx.windows.window_len();
  const int V = ctx.model.config().vocab_size;
  FinalDistribution final;
  std::vector<float> final_logits;
  ctx.windows.read(w, final.tokens);
  {
    ObserverScope scope(ctx.model.backbone(), observer);
    ctx.model.logits(final.tokens.data(), 1, T, final_logits);
  }
  final.logp.resize(size_t(T) * V);
  final.top.resize(T);
  for (int t = 0; t + 1 < T; ++t) {
    log_softmax(final_logits.data() + size_t(t) * V, V, final.logp.data() + size_t(t) * V);
    final.top[t] = top5(final.logp.data() + size_t(t) * V, V);
  }
  return final;
}

// The four statistics of one depth state (width columns, T rows), as window means.
std::array<double, kStatistics> state_statistics(DiagContext& ctx, const float* state, int width,
                                                 const FinalDistribution& final) {
  const int T = ctx.windows.window_len();
  const int V = ctx.model.config().vocab_size;
  std::vector<float> logits;
  std::vector<double> logp(V);
  ctx.model.readout_logits(state, T, width, logits);
  double ce = 0, kl = 0, kl_reverse = 0, overlap = 0;
  for (int t = 0; t + 1 < T; ++t) {
    log_softmax(logits.data() + size_t(t) * V, V, logp.data());
    const double* f = final.logp.data() + size_t(t) * V;
    ce -= logp[final.tokens[t + 1]];
    for (int v = 0; v < V; ++v) {
      kl += std::exp(f[v]) * (f[v] - logp[v]);
      kl_reverse += std::exp(logp[v]) * (logp[v] - f[v]);
    }
    const std::array<int, 5> top = top5(logp.data(), V);
    int shared = 0;
    for (int a : top)
      for (int b : final.top[t]) shared += a >= 0 && a == b;
    overlap += shared / 5.0;
  }
  const double n = T - 1;
  std::array<double, kStatistics> out{};
  out[kCe] = ce / n;
  out[kKl] = kl / n;
  out[kKlReverse] = kl_reverse / n;
  out[kTop5] = overlap / n;
  return out;
}

// Collects the depth states of a forward pass into states[l].
struct StateCollector {
  std::vector<std::vector<float>> states;
  int width = 0;
  ForwardObserver<float> observer;
  explicit StateCollector(int S) : states(S) {
    observer.depth_state = [this](int l, const float* z, int64_t rows, int w) {
      width = w;
      states[l].assign(z, z + rows * w);
    };
  }
  StateCollector(const StateCollector&) = delete;  // the observer points at this object
  StateCollector& operator=(const StateCollector&) = delete;
};

std::vector<DiagnosticDataset> run(DiagContext& ctx) {
  const int L = ctx.n_layer(), S = L + 1;
  const int64_t W = ctx.settings.logitlens_windows;
  // per_window[w][statistic][l]: window means over the T−1 predicted tokens.
  std::vector<double> per_window(size_t(W) * kStatistics * S, 0.0);
  StateCollector collector(S);
  ctx.progress.set_local_total(ctx.my_count(W));
  for (int64_t w = 0; w < W; ++w) {
    if (!ctx.mine(w)) continue;
    const FinalDistribution final = forward_window(ctx, collector.observer, w);
    double* stats = per_window.data() + size_t(w) * kStatistics * S;
    for (int l = 0; l < S; ++l) {
      const auto values = state_statistics(ctx, collector.states[l].data(), collector.width, final);
      for (int s = 0; s < kStatistics; ++s) stats[s * S + l] = values[s];
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
  d.cost = [](const DiagScope& scope) {
    const int64_t W = scope.settings.logitlens_windows, states = scope.n_layer + 1;
    return DiagCost{W, W * states,
                    std::to_string(W) + " windows x 1 pass (+ " + std::to_string(states) +
                        " head decodes each)"};
  };
  // Each depth state is read out through the LM head and compared with p_final over the whole
  // vocabulary: with a large V this, not the forward pass, is most of the time.
  d.extra_work = [](DiagContext& ctx) {
    StateCollector collector(ctx.n_layer() + 1);
    const FinalDistribution final = forward_window(ctx, collector.observer, 0);
    const auto start = std::chrono::steady_clock::now();
    state_statistics(ctx, collector.states.back().data(), collector.width, final);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return ExtraWork{ctx.settings.logitlens_windows * (ctx.n_layer() + 1), seconds,
                     "depth-state readouts"};
  };
  d.not_applicable = [](const DiagScope&) { return std::string(); };
  d.run = run;
  return d;
}

}  // namespace db::diag
