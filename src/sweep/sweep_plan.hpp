// A suite expanded into its runs: shapes × designs × learning rates, each a complete RunConfig,
// ordered longest first (by training FLOPs) so the dynamic hand-out ends with the short runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sweep/suite.hpp"

namespace db::sweep {

struct PlannedRun {
  RunConfig config;
  ParameterCounts counts;         // of the design when registered, else of the Pre-LN shape
  int64_t tokens = 0;             // steps · global batch · seq_len
  double flops = 0;               // training FLOPs (PaLM convention, design extras included)
  bool design_registered = true;  // false: the run will be recorded as failed (unknown design)
};

// The shapes of the suite, in file order: solved depths first, then explicit shapes. Throws
// db::Error, naming the shape, for a solved shape further than suite.budget_tolerance from the
// budget (with the nearest budgets that fit every depth) and for a head_dim below
// suite.min_head_dim.
std::vector<Shape> suite_shapes(const Suite& suite);

// (count − budget) / budget of a shape under the suite's budget kind; 0 without a budget.
double budget_deviation(const Suite& suite, const Shape& shape);

// Every run of the suite writing into out_dir, longest first (ties keep file order).
// Throws db::Error when two runs would share a file name.
std::vector<PlannedRun> plan_suite(const Suite& suite, const std::string& out_dir);

}  // namespace db::sweep
