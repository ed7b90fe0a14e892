// §5 Single-layer pruning: skip block l (every l, the last included) and measure the LM loss
// delta ℒ_pruned − ℒ on the sampled windows and, given an ARC-Easy file, the zero-shot acc and
// acc_norm deltas. The baseline and the L pruned models are independent tasks over the ranks.
#include <cmath>
#include <limits>

#include "diag/diagnostics.hpp"
#include "diag/eval_tasks.hpp"
#include "util/bootstrap.hpp"

namespace db::diag {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<ArcQuestion> arc_questions(const DiagSettings& settings) {
  if (settings.arc_file.empty()) return {};
  std::vector<ArcQuestion> questions = read_arc(settings.arc_file);
  if (settings.arc_limit > 0 && int64_t(questions.size()) > settings.arc_limit)
    questions.resize(settings.arc_limit);
  return questions;
}

int64_t arc_passes(const std::vector<ArcQuestion>& questions) {
  int64_t passes = 0;
  for (const ArcQuestion& q : questions) passes += int64_t(q.choices.size());
  return passes;
}

// acc and acc_norm of one question: argmax of the summed log-likelihood, and of the sum divided
// by the continuation's length in bytes (first maximum wins a tie).
std::pair<bool, bool> answer_arc(DiagContext& ctx, const ArcQuestion& q) {
  int best = -1, best_norm = -1;
  double top = -INFINITY, top_norm = -INFINITY;
  for (size_t c = 0; c < q.choices.size(); ++c) {
    const TargetScore s =
        score_target(ctx.model, *ctx.tokenizer, q.prompt, q.choices[c], ctx.eval_context());
    const double loglik = -s.nll, norm = loglik / double(q.choices[c].size());
    if (loglik > top) top = loglik, best = int(c);
    if (norm > top_norm) top_norm = norm, best_norm = int(c);
    ctx.progress.step();
  }
  return {best == q.answer, best_norm == q.answer};
}

std::vector<DiagnosticDataset> run(DiagContext& ctx) {
  const int L = ctx.n_layer();
  const int64_t W = ctx.settings.pruning_windows, tasks = L + 1;  // 0: baseline, 1 + l: skip l
  const std::vector<ArcQuestion> questions = arc_questions(ctx.settings);
  const int64_t Q = int64_t(questions.size());
  Backbone<float>& net = ctx.model.backbone();
  std::vector<double> losses(size_t(tasks) * W, 0.0);
  std::vector<double> acc(size_t(tasks) * Q, 0.0), acc_norm(size_t(tasks) * Q, 0.0);
  ctx.progress.set_local_total(ctx.my_count(tasks) * (W + arc_passes(questions)));
  std::vector<int32_t> tokens;
  for (int64_t t = 0; t < tasks; ++t) {
    if (!ctx.mine(t)) continue;
    if (t > 0) net.skip_block(int(t - 1));
    for (int64_t w = 0; w < W; ++w) {
      losses[size_t(t) * W + w] = ctx.window_loss(w, tokens);
      ctx.progress.step();
    }
    for (int64_t q = 0; q < Q; ++q) {
      const auto [a, an] = answer_arc(ctx, questions[q]);
      acc[size_t(t) * Q + q] = a;
      acc_norm[size_t(t) * Q + q] = an;
    }
    net.reset_schedule();
  }
  ctx.gather(losses);
  ctx.gather(acc);
  ctx.gather(acc_norm);

  // Deltas of task means against the baseline, over the units (windows or questions) a
  // resample draws.
  auto deltas = [L](const std::vector<double>& values, int64_t units,
                    const std::vector<int>* counts, double scale, double* out) {
    auto total = [&](int64_t t) {
      double s = 0, n = 0;
      for (int64_t u = 0; u < units; ++u) {
        const double c = counts ? (*counts)[u] : 1;
        s += c * values[size_t(t) * units + u];
        n += c;
      }
      return s / (n * scale);
    };
    const double base = total(0);
    for (int l = 0; l < L; ++l) out[l] = total(1 + l) - base;
  };
  const double targets = double(ctx.windows.window_len() - 1);
  std::vector<DiagnosticDataset> out;
  {
    std::vector<double> delta(L);
    deltas(losses, W, nullptr, targets, delta.data());
    const BootstrapDraws draws(W, ctx.settings.bootstrap, ctx.settings.seed);
    const Interval ci = bootstrap_interval(
        draws, L, [&](const std::vector<int>& c, double* o) { deltas(losses, W, &c, targets, o); });
    double base = 0;
    for (int64_t w = 0; w < W; ++w) base += losses[w];
    DiagnosticDataset set = DiagnosticDataset::vector("pruning_loss_delta", delta);
    set.attributes["definition"] =
        "L_pruned(l) - L: token-weighted mean next-token loss on the windows with block l "
        "skipped minus the unpruned loss, l = 0..L-1 (diagnostics.md 5)";
    set.attributes["baseline_loss"] = base / (double(W) * targets);
    ctx.describe_windows(set, W);
    out.push_back(set);
    add_interval(out, set, ci.low, ci.high);
  }
  if (Q > 0) {
    const BootstrapDraws draws(Q, ctx.settings.bootstrap, ctx.settings.seed);
    for (const auto& [name, values] :
         {std::pair<std::string, const std::vector<double>*>{"pruning_arc_acc_delta", &acc},
          std::pair<std::string, const std::vector<double>*>{"pruning_arc_acc_norm_delta",
                                                             &acc_norm}}) {
      std::vector<double> delta(L);
      deltas(*values, Q, nullptr, 1.0, delta.data());
      const Interval ci = bootstrap_interval(
          draws, L, [&](const std::vector<int>& c, double* o) { deltas(*values, Q, &c, 1.0, o); });
      double base = 0;
      for (int64_t q = 0; q < Q; ++q) base += (*values)[q];
      const bool norm = name == "pruning_arc_acc_norm_delta";
      DiagnosticDataset set = DiagnosticDataset::vector(name, delta);
      set.attributes["definition"] =
          std::string("ARC-Easy zero-shot ") + (norm ? "acc_norm" : "acc") +
          " with block l skipped minus unpruned; prompt \"Question: {question}\\nAnswer:\", "
          "choice \" {choice}\" scored by summed log-likelihood" +
          (norm ? " divided by its length in bytes" : "") + " (diagnostics.md 5)";
      set.attributes["baseline"] = base / double(Q);
      set.attributes["data"] = ctx.settings.arc_file;
      set.attributes["questions"] = Q;
      set.attributes["eval_context"] = ctx.eval_context();
      set.attributes["seed"] = int64_t(ctx.settings.seed);
      set.attributes["bootstrap_resamples"] = int64_t(ctx.settings.bootstrap);
      out.push_back(set);
      add_interval(out, set, ci.low, ci.high);
    }
  }
  return out;
}

}  // namespace

Diagnostic pruning_diagnostic() {
  Diagnostic d;
  d.name = "pruning";
  d.summary = "single-layer pruning: LM loss and ARC-Easy deltas";
  d.options = {
      count_option("pruning-windows", "windows for the pruning loss deltas",
                   &DiagSettings::pruning_windows, 1),
      file_option("arc", "ARC-Easy JSONL for the pruning accuracy deltas", &DiagSettings::arc_file),
      count_option("arc-limit", "ARC questions used (0 = all)", &DiagSettings::arc_limit, 0)};
  d.datasets = {"pruning_loss_delta", "pruning_arc_acc_delta", "pruning_arc_acc_norm_delta"};
  d.cost = [](const DiagScope& scope) {
    const int64_t W = scope.settings.pruning_windows, L = scope.n_layer;
    const int64_t arc = arc_passes(arc_questions(scope.settings));
    std::string text = "(1 baseline + " + std::to_string(L) + " pruned) x (" + std::to_string(W) +
                       " windows" + (arc ? " + " + std::to_string(arc) + " ARC choices" : "") + ")";
    return DiagCost{(L + 1) * (W + arc), 0, text};
  };
  d.not_applicable = [](const DiagScope&) { return std::string(); };
  d.run = run;
  return d;
}

}  // namespace db::diag
