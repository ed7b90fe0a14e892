// Shared plumbing of the diagnostics (diagnostics.md "Data and the shared plumbing"): the
// settings, the sampled token windows, the communicator over which independent passes are
// spread, progress lines with an ETA, and the scoring of a target continuation.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/communicator.hpp"
#include "data/token_dataset.hpp"
#include "diag/diag_file.hpp"
#include "model/model.hpp"
#include "tokenizer/tokenizer.hpp"
#include "train/run_config.hpp"

namespace db::diag {

// Sample counts default to the paper's runs (diagnostics.md "Data").
struct DiagSettings {
  int window_len = 512;  // T_d, clamped to the run's seq_len (see doc/diagnostics.md)
  uint64_t seed = 42;
  int bootstrap = 1000;
  int64_t angular_windows = 1024;
  int64_t causal_windows = 128;
  int64_t permutation_windows = 128;
  int64_t path_windows = 32;  // path weights and effective rank
  int64_t pruning_windows = 128;
  int64_t logitlens_windows = 128;
  int64_t arc_limit = 0;  // ARC questions used (0 = all)
  int64_t nll_limit = 0;  // examples per NLL task (0 = all)
  int eval_context = 0;   // longest evaluation sequence in tokens (0 = the run's seq_len)
  double dead_threshold = 0.05;
  std::string arc_file;
  std::map<std::string, std::string> task_files;  // domain NLL task → file
};

// Throws on a setting no diagnostic can work with (a window count or resample count below 1, a
// negative limit, a threshold outside [0, 1]), naming its `depthbench diagnose` option, before
// any file is read.
void check_settings(const DiagSettings& settings);

// Windows of T_d tokens drawn uniformly with replacement from a token file set with a fixed
// seed. The i-th draw is the same for every diagnostic, so a diagnostic using N windows uses
// the first N of the stream.
class WindowSample {
 public:
  WindowSample(std::vector<std::string> files, int window_len,
               const data::TokenFileOptions& options, uint64_t seed);
  int window_len() const { return window_len_; }
  int64_t index(int64_t i) const;  // the dataset window of draw i
  void read(int64_t i, std::vector<int32_t>& tokens) const;
  const std::vector<std::string>& files() const { return dataset_.files(); }
  int64_t available() const { return dataset_.num_windows(); }

 private:
  data::TokenDataset dataset_;
  int window_len_;
  uint64_t seed_;
  mutable std::vector<int64_t> drawn_;
};

// Progress lines of one diagnostic on rank 0: the forward passes it needs before it starts,
// then lines with the share done and an ETA from rank 0's own passes.
class Progress {
 public:
  Progress(const Communicator& comm, bool verbose) : comm_(comm), verbose_(verbose) {}
  void begin(const std::string& name, int64_t total_passes, const std::string& breakdown);
  // Passes this rank will run in the current diagnostic (for its ETA).
  void set_local_total(int64_t passes) { local_total_ = passes; }
  void step(int64_t passes = 1);
  double end();  // seconds; prints the completion line

 private:
  using Clock = std::chrono::steady_clock;
  const Communicator& comm_;
  bool verbose_;
  std::string name_;
  int64_t local_total_ = 0, local_done_ = 0;
  int64_t printed_tenths_ = 0;  // tenths of local_total_ done at the last line
  Clock::time_point start_, last_print_;
};

// What a diagnostic's cost and applicability depend on, all known before a model is loaded:
// `plan` estimates a suite's diagnostics with the same functions `diagnose` prints before it runs.
struct DiagScope {
  const DiagSettings& settings;
  int n_layer = 0;
};

// A diagnostic's work: forward passes of one window (or one evaluation example) over all
// ranks, and readouts of a window's states through the LM head beyond them (the logit lens).
struct DiagCost {
  int64_t forward_passes = 0;
  int64_t head_readouts = 0;
  std::string breakdown;  // for the line printed before it starts
};

struct DiagContext {
  Model<float>& model;
  const RunConfig& run;
  const DiagSettings& settings;
  const Communicator& comm;
  const WindowSample& windows;
  tokenizer::Tokenizer* tokenizer;  // null unless an evaluation file needs it
  Progress& progress;

  int n_layer() const { return model.config().n_layer; }
  DiagScope scope() const { return {settings, n_layer()}; }
  // Independent tasks t = 0, 1, ... are dealt round-robin over the ranks.
  bool mine(int64_t task) const { return task % comm.size() == comm.rank(); }
  int64_t my_count(int64_t tasks) const;
  // Each rank filled only its own entries (zero elsewhere): the sum gives every rank the whole
  // array, exactly (x + 0 = x), so the result does not depend on the number of ranks.
  void gather(std::vector<double>& values) const;
  // Summed next-token loss of sampled window i and its number of targets.
  double window_loss(int64_t i, std::vector<int32_t>& scratch) const;
  int64_t eval_context() const;
  // The attributes every dataset of a window-based diagnostic carries.
  void describe_windows(DiagnosticDataset& set, int64_t windows) const;
};

// Log-likelihood of a target continuation given a prompt, tokenized separately and
// concatenated; when longer than max_context the oldest tokens are dropped (targets that fall
// out are not scored). Log-softmax in float64.
struct TargetScore {
  double nll = 0;      // summed over the scored target tokens
  int64_t tokens = 0;  // target tokens scored
  bool truncated = false;
};
TargetScore score_target(Model<float>& model, tokenizer::Tokenizer& tok, const std::string& prompt,
                         const std::string& target, int64_t max_context);

// Puts the observer on the backbone for the lifetime of the scope.
class ObserverScope {
 public:
  ObserverScope(Backbone<float>& net, ForwardObserver<float>& observer) : net_(net) {
    net_.observer = &observer;
  }
  ~ObserverScope() { net_.observer = nullptr; }
  ObserverScope(const ObserverScope&) = delete;
  ObserverScope& operator=(const ObserverScope&) = delete;

 private:
  Backbone<float>& net_;
};

// An option of `depthbench diagnose` that belongs to one diagnostic (e.g. --causal-windows):
// the diagnostic declares it, the command line registers every declared option.
struct DiagnosticOption {
  std::string flag;  // without the leading "--"
  std::string help;
  std::function<std::string(const DiagSettings&)> value;       // current value as text ("" = none)
  std::function<void(DiagSettings&, const std::string&)> set;  // throws db::Error when invalid
};
// A whole number ≥ min stored in a DiagSettings field.
DiagnosticOption count_option(std::string flag, std::string help, int64_t DiagSettings::*field,
                              int64_t min);
// A number in (0, 1) stored in a DiagSettings field.
DiagnosticOption fraction_option(std::string flag, std::string help, double DiagSettings::*field);
// A file path stored in a DiagSettings field.
DiagnosticOption file_option(std::string flag, std::string help, std::string DiagSettings::*field);

// A diagnostic: its name, the forward passes it needs (over all ranks) and its computation.
// Work of a diagnostic beyond its forward passes, for the time estimate printed before it
// runs: how many units, the measured seconds of one, and what a unit is.
struct ExtraWork {
  int64_t units = 0;
  double seconds_each = 0;
  std::string what;
};

struct Diagnostic {
  std::string name;
  std::string summary;
  std::vector<DiagnosticOption> options;
  // The datasets it writes under diagnostics/ (each with its _ci_low/_ci_high bounds where it
  // has them); run_diagnostics refuses to write any other.
  std::vector<std::string> datasets;
  bool declares(const std::string& dataset) const;
  // Its work at these settings: printed before it starts, estimated by `plan`.
  std::function<DiagCost(const DiagScope&)> cost;
  // Whether it applies (e.g. domain_nll needs a task file); the reason when it does not.
  std::function<std::string(const DiagScope&)> not_applicable;
  std::function<std::vector<DiagnosticDataset>(DiagContext&)> run;
  // Optional: measures one unit of its extra work (run on every rank, collectively safe).
  std::function<ExtraWork(DiagContext&)> extra_work;
  // Reads a design's own hooks (path weights, stream maps): skipped for Hugging Face checkpoints.
  bool needs_design_internals = false;
};

// Adds "<name>_ci_low"/"<name>_ci_high" datasets of the same shape.
void add_interval(std::vector<DiagnosticDataset>& out, const DiagnosticDataset& of,
                  const std::vector<double>& low, const std::vector<double>& high);

}  // namespace db::diag
