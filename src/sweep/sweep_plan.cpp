#include "sweep/sweep_plan.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"

namespace db::sweep {
namespace {

bool is_registered(const std::string& design) {
  for (const DesignInfo& d : all_designs())
    if (d.name == design) return true;
  return false;
}

}  // namespace

std::vector<Shape> suite_shapes(const Suite& suite) {
  const int vocab = suite.base.model.vocab_size;
  std::vector<Shape> shapes;
  for (int depth : suite.depths) {
    try {
      shapes.push_back(solve_shape(suite.budget, *suite.budget_kind, depth, suite.rule, vocab));
    } catch (const Error& e) {
      throw Error(suite.source + ": suite.depths " + std::to_string(depth) + ": " + e.what());
    }
  }
  for (const auto& [depth, width] : suite.shapes) {
    try {
      shapes.push_back(make_shape(depth, width, suite.rule, vocab));
    } catch (const Error& e) {
      throw Error(suite.source + ": suite.shapes " + std::to_string(depth) + "x" +
                  std::to_string(width) + ": " + e.what());
    }
  }
  return shapes;
}

std::vector<PlannedRun> plan_suite(const Suite& suite, const std::string& out_dir) {
  std::vector<PlannedRun> runs;
  for (const Shape& shape : suite_shapes(suite)) {
    for (const std::string& design : suite.designs) {
      for (double lr : suite.learning_rates(design)) {
        PlannedRun run;
        RunConfig& c = run.config;
        c = suite.base;
        // The shape from the solver; everything else about the model stays as the recipe set it.
        c.model.arch = design;
        c.model.n_layer = shape.model.n_layer;
        c.model.d_model = shape.model.d_model;
        c.model.n_head = shape.model.n_head;
        c.model.n_kv_head = shape.model.n_kv_head;
        c.model.ff = shape.model.ff;
        c.model.qk_norm = shape.model.qk_norm;
        c.recipe.learning_rate = lr;
        c.suite = suite.name;
        c.out_dir = out_dir;
        c.name.clear();
        Recipe& r = c.recipe;
        if (!suite.steps_fixed) {  // Chinchilla: tokens_per_parameter tokens per (Pre-LN) parameter
                                   // of the shape
          const double tokens = suite.tokens_per_parameter * double(shape.counts.total);
          r.steps = std::max<int64_t>(1, int64_t(std::ceil(tokens / double(r.tokens_per_step()))));
        }
        run.tokens = r.steps * r.tokens_per_step();
        run.design_registered = is_registered(design);
        ModelConfig counted = c.model;
        if (!run.design_registered) counted.arch = "pre_ln";
        run.counts = count_parameters(counted);
        run.flops = flops_per_token(counted, r.seq_len) * double(run.tokens);
        runs.push_back(std::move(run));
      }
    }
  }
  std::set<std::string> names;
  for (const PlannedRun& run : runs)
    DB_REQUIRE(
        names.insert(run.config.run_name()).second,
        suite.source + ": two runs would share the name " + run.config.run_name() +
            " (learning rates that print alike at one significant digit, or a repeated shape)");
  std::stable_sort(runs.begin(), runs.end(),
                   [](const PlannedRun& a, const PlannedRun& b) { return a.flops > b.flops; });
  return runs;
}

}  // namespace db::sweep
