#include "diag/context.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>

#include "core/error.hpp"
#include "core/format.hpp"
#include "core/rng.hpp"
#include "util/utf8.hpp"

namespace db::diag {

void check_settings(const DiagSettings& s) {
  const auto at_least = [](const char* option, int64_t value, int64_t minimum) {
    DB_REQUIRE(value >= minimum, std::string("--") + option + " = " + std::to_string(value) +
                                     ": must be ≥ " + std::to_string(minimum));
  };
  at_least("window-len", s.window_len, 2);
  at_least("bootstrap", s.bootstrap, 1);
  at_least("angular-windows", s.angular_windows, 1);
  at_least("causal-windows", s.causal_windows, 1);
  at_least("permutation-windows", s.permutation_windows, 1);
  at_least("path-windows", s.path_windows, 1);
  at_least("pruning-windows", s.pruning_windows, 1);
  at_least("logitlens-windows", s.logitlens_windows, 1);
  at_least("arc-limit", s.arc_limit, 0);  // 0: all questions
  at_least("nll-limit", s.nll_limit, 0);
  at_least("eval-context", s.eval_context, 0);  // 0: the run's seq_len
  DB_REQUIRE(s.dead_threshold >= 0 && s.dead_threshold <= 1,
             "--dead-threshold = " + exact_number_text(s.dead_threshold) + ": must be in [0, 1]");
}

WindowSample::WindowSample(std::vector<std::string> files, int window_len,
                           const data::TokenFileOptions& options, uint64_t seed)
    : dataset_(std::move(files), window_len, options), window_len_(window_len), seed_(seed) {}

int64_t WindowSample::index(int64_t i) const {
  if (int64_t(drawn_.size()) <= i) {
    // One stream for all draws: draw i never depends on how many windows a diagnostic uses.
    Rng rng(seed_, "diagnostic-windows");
    drawn_.clear();
    const int64_t want = std::max<int64_t>(i + 1, 1024);
    for (int64_t k = 0; k < want; ++k) drawn_.push_back(int64_t(rng.below(dataset_.num_windows())));
  }
  return drawn_[i];
}

void WindowSample::read(int64_t i, std::vector<int32_t>& tokens) const {
  tokens.resize(window_len_);
  dataset_.read_window(index(i), tokens);
}

void Progress::begin(const std::string& name, int64_t total_passes, const std::string& breakdown) {
  name_ = name;
  local_total_ = local_done_ = printed_tenths_ = 0;
  start_ = last_print_ = Clock::now();
  if (verbose_ && comm_.rank() == 0) {
    std::printf("%s: %lld forward passes (%s) on %d rank%s\n", name.c_str(),
                (long long)total_passes, breakdown.c_str(), comm_.size(),
                comm_.size() == 1 ? "" : "s");
    std::fflush(stdout);
  }
}

void Progress::step(int64_t passes) {
  local_done_ += passes;
  if (!verbose_ || comm_.rank() != 0 || local_total_ <= 0) return;
  const auto now = Clock::now();
  const double since_print = std::chrono::duration<double>(now - last_print_).count();
  // At most one line per 10 s and per tenth of the passes: a short diagnostic prints only its
  // first and last line, a long one at most ten more. (Whether stdout is a terminal cannot
  // decide it: under mpirun a rank's stdout is a pseudo-terminal even when mpirun's is a file.)
  const int64_t tenths = local_done_ * 10 / local_total_;
  if (since_print < 10.0 || tenths == printed_tenths_) return;
  printed_tenths_ = tenths;
  last_print_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double eta = elapsed / double(local_done_) * double(local_total_ - local_done_);
  std::printf("%s: %3.0f%% (%lld/%lld passes on rank 0), %.1f s elapsed, ETA %.1f s\n",
              name_.c_str(), 100.0 * local_done_ / local_total_, (long long)local_done_,
              (long long)local_total_, elapsed, eta);
  std::fflush(stdout);
}

double Progress::end() {
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  if (verbose_ && comm_.rank() == 0) {
    std::printf("%s: done in %.2f s\n", name_.c_str(), seconds);
    std::fflush(stdout);
  }
  return seconds;
}

int64_t DiagContext::my_count(int64_t tasks) const {
  int64_t n = 0;
  for (int64_t t = 0; t < tasks; ++t) n += mine(t);
  return n;
}

void DiagContext::gather(std::vector<double>& values) const {
  if (comm.size() > 1) comm.allreduce_sum(std::span<double>(values));
}

double DiagContext::window_loss(int64_t i, std::vector<int32_t>& scratch) const {
  windows.read(i, scratch);
  return model.forward_loss(scratch.data(), 1, windows.window_len());
}

int64_t DiagContext::eval_context() const {
  return settings.eval_context > 0 ? settings.eval_context : run.recipe.seq_len;
}

void DiagContext::describe_windows(DiagnosticDataset& set, int64_t count) const {
  std::string files;
  for (const std::string& f : windows.files()) files += (files.empty() ? "" : ";") + f;
  set.attributes["data"] = files;
  set.attributes["window_len"] = int64_t(windows.window_len());
  set.attributes["windows"] = count;
  set.attributes["window_sampling"] =
      std::string("uniform with replacement, Rng(seed, \"diagnostic-windows\")");
  set.attributes["seed"] = int64_t(settings.seed);
  set.attributes["bootstrap_resamples"] = int64_t(settings.bootstrap);
}

TargetScore score_target(Model<float>& model, tokenizer::Tokenizer& tok, const std::string& prompt,
                         const std::string& target, int64_t max_context) {
  auto encode = [&tok](const std::string& text) {
    std::string clean;
    repair_utf8(text, clean);
    return tok.encode(clean);
  };
  const std::vector<uint32_t> p = encode(prompt), t = encode(target);
  std::vector<int32_t> sequence(p.begin(), p.end());
  sequence.insert(sequence.end(), t.begin(), t.end());
  TargetScore score;
  int64_t first_target = int64_t(p.size());
  if (int64_t(sequence.size()) > max_context) {
    const int64_t drop = int64_t(sequence.size()) - max_context;
    sequence.erase(sequence.begin(), sequence.begin() + drop);
    first_target -= drop;
    score.truncated = true;
  }
  const int64_t n = int64_t(sequence.size());
  first_target = std::max<int64_t>(first_target, 1);  // a token needs a predecessor
  if (n < 2 || first_target >= n) return score;
  std::vector<float> logits;
  model.logits(sequence.data(), 1, int(n), logits);
  const int V = model.config().vocab_size;
  for (int64_t pos = first_target; pos < n; ++pos) {
    const float* row = logits.data() + (pos - 1) * V;
    double largest = row[0];
    for (int v = 1; v < V; ++v) largest = std::max<double>(largest, row[v]);
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(double(row[v]) - largest);
    score.nll += largest + std::log(sum) - double(row[sequence[pos]]);
    ++score.tokens;
  }
  return score;
}

void add_interval(std::vector<DiagnosticDataset>& out, const DiagnosticDataset& of,
                  const std::vector<double>& low, const std::vector<double>& high) {
  DiagnosticDataset lo = of, hi = of;
  lo.name = of.name + "_ci_low";
  hi.name = of.name + "_ci_high";
  lo.values = low;
  hi.values = high;
  lo.integer = hi.integer = false;
  const std::string what = "95% bootstrap interval of diagnostics/" + of.name +
                           " over the sampled units (percentiles 2.5/97.5, linear)";
  lo.attributes = {{"definition", "lower bound: " + what}};
  hi.attributes = {{"definition", "upper bound: " + what}};
  for (const char* key : {"seed", "bootstrap_resamples", "windows", "examples", "questions"})
    if (of.attributes.count(key)) {
      lo.attributes[key] = of.attributes.at(key);
      hi.attributes[key] = of.attributes.at(key);
    }
  out.push_back(std::move(lo));
  out.push_back(std::move(hi));
}

bool Diagnostic::declares(const std::string& dataset) const {
  for (const std::string& d : datasets)
    if (dataset == d || dataset == d + "_ci_low" || dataset == d + "_ci_high") return true;
  return false;
}

namespace {

double parse_number(const std::string& flag, const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  throw Error("--" + flag + " = " + text + ": must be a number");
}

}  // namespace

DiagnosticOption count_option(std::string flag, std::string help, int64_t DiagSettings::*field,
                              int64_t min) {
  DiagnosticOption o{flag, std::move(help), nullptr, nullptr};
  o.value = [field](const DiagSettings& s) { return std::to_string(s.*field); };
  o.set = [field, min, flag](DiagSettings& s, const std::string& text) {
    const double v = parse_number(flag, text);
    if (!(v == std::floor(v) && v >= double(min) && v < 9e15))
      throw Error("--" + flag + " = " + text + ": must be a whole number ≥ " + std::to_string(min));
    s.*field = int64_t(v);
  };
  return o;
}

DiagnosticOption fraction_option(std::string flag, std::string help, double DiagSettings::*field) {
  DiagnosticOption o{flag, std::move(help), nullptr, nullptr};
  o.value = [field](const DiagSettings& s) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", s.*field);
    return std::string(text);
  };
  o.set = [field, flag](DiagSettings& s, const std::string& text) {
    const double v = parse_number(flag, text);
    if (!(v > 0 && v < 1)) throw Error("--" + flag + " = " + text + ": must be in (0, 1)");
    s.*field = v;
  };
  return o;
}

DiagnosticOption file_option(std::string flag, std::string help, std::string DiagSettings::*field) {
  DiagnosticOption o{std::move(flag), std::move(help), nullptr, nullptr};
  o.value = [field](const DiagSettings& s) { return s.*field; };
  o.set = [field](DiagSettings& s, const std::string& text) { s.*field = text; };
  return o;
}

}  // namespace db::diag
