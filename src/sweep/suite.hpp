// A sweep suite: which designs, which shapes (a parameter budget and depths, or explicit shapes),
// which learning rates and which recipe (doc/suites.md describes the INI format; spec: suites.md).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sweep/shape_solver.hpp"
#include "train/run_config.hpp"

namespace db::sweep {

struct SuiteEstimate {  // for `plan`: GPU-hours = FLOPs / (mfu · peak) / 3600
  double mfu = 0.40;
  double peak_tflops_per_gpu = 989;  // H100 SXM bf16 dense
  int gpus_per_run = 1;
  // CPU runs (train.backend = cpu): achieved training GFLOP/s of one rank. Unset, `plan` uses
  // this machine's nearest `depthbench bench` measurement (sweep/cpu_throughput.hpp), else the
  // default: what the demo sweep achieved on the 2-core VM (doc/performance.md, "The demo
  // sweep": 13.8K tokens/s over 2 ranks at ≈ 6.1 MFLOP per token, validation and checkpoints
  // included).
  std::optional<double> cpu_gflops_per_rank;
  static constexpr double kDefaultCpuGflopsPerRank = 35.0;
};

struct Suite {
  std::string name, description, source;
  std::vector<std::string>
      designs;  // design names as written; checked against the registry per run
  std::optional<BudgetKind> budget_kind;
  double budget = 0;                        // parameters
  std::vector<int> depths;                  // solved with the budget
  std::vector<std::pair<int, int>> shapes;  // explicit (L, d)
  ShapeRule rule;
  // Iso-parameter honesty (doc/suites.md, "The shape solver"): a solved shape whose count is
  // further than this fraction from the budget is refused, naming budgets that would work.
  double budget_tolerance = 0.05;
  int min_head_dim = 8;  // shapes with a smaller head_dim are refused (a suite may lower it)
  // Training seeds, one run per seed (the seed axis); empty: one run with the recipe's
  // train.seed and names without a seed part.
  std::vector<uint64_t> seeds;
  double tokens_per_parameter = 20;  // unless the recipe fixes train.steps
  // Diagnostics run on every run that completes in a sweep (`diagnostics = all` or names;
  // default none): doc/diagnostics.md.
  std::vector<std::string> diagnostics;
  bool steps_fixed = false;
  std::vector<double> default_learning_rates;
  std::map<std::string, std::vector<double>> design_learning_rates;
  std::vector<std::pair<std::string, std::string>> recipe;  // "section.key", value
  RunConfig base;  // the recipe applied to a default RunConfig
  SuiteEstimate estimate;

  const std::vector<double>& learning_rates(const std::string& design) const;
};

// Throws db::Error naming the file, the line and the key for anything malformed.
Suite parse_suite_text(const std::string& text, const std::string& source);
Suite parse_suite_file(const std::string& path);

// "405M", "1.6B", "2.5e6" or "302000000" as a number of parameters.
double parse_parameter_count(const std::string& key, const std::string& text);

}  // namespace db::sweep
