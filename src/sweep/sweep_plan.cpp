#include "sweep/sweep_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
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

double budget_deviation(const Suite& suite, const Shape& shape) {
  if (!suite.budget_kind) return 0;
  const double count =
      double(*suite.budget_kind == BudgetKind::total ? shape.counts.total : shape.counts.backbone);
  return (count - suite.budget) / suite.budget;
}

namespace {

std::string count_text(double count) {
  char text[32];
  if (count >= 1e9)
    std::snprintf(text, sizeof text, "%.4gB", count / 1e9);
  else if (count >= 1e6)
    std::snprintf(text, sizeof text, "%.4gM", count / 1e6);
  else
    std::snprintf(text, sizeof text, "%.4gK", count / 1e3);
  return text;
}

// Whether every depth of the suite has a width within the tolerance of `budget`.
bool budget_fits(const Suite& suite, double budget) {
  for (int depth : suite.depths) {
    try {
      const Shape shape =
          solve_shape(budget, *suite.budget_kind, depth, suite.rule, suite.base.model.vocab_size);
      const double count = double(*suite.budget_kind == BudgetKind::total ? shape.counts.total
                                                                          : shape.counts.backbone);
      if (std::abs(count - budget) > suite.budget_tolerance * budget) return false;
    } catch (const Error&) {
      return false;
    }
  }
  return true;
}

// The nearest budgets below and above the suite's at which every depth fits the tolerance:
// round numbers (three significant digits of the budget's magnitude, so they print exactly),
// searched up to a factor of 4 each way; "" when none is found.
std::string working_budgets(const Suite& suite) {
  const double unit = std::pow(10.0, std::floor(std::log10(suite.budget)) - 2);
  const double start = std::round(suite.budget / unit);
  std::vector<std::string> found;
  for (const double direction : {-1.0, 1.0}) {
    for (double k = start + direction; k * unit > suite.budget / 4 && k * unit < suite.budget * 4;
         k += direction) {
      if (budget_fits(suite, k * unit)) {
        found.push_back(count_text(k * unit));
        break;
      }
    }
  }
  if (found.empty()) return "";
  return found.size() == 2 ? found[0] + " or " + found[1] : found[0];
}

// Refuses a solved shape too far from the budget, and any shape with too small a head_dim.
void check_shape(const Suite& suite, const Shape& shape, bool solved, const std::string& where) {
  const ModelConfig& m = shape.model;
  DB_REQUIRE(m.head_dim() >= suite.min_head_dim,
             where + ": head_dim " + std::to_string(m.head_dim()) + " (d_model " +
                 std::to_string(m.d_model) + " / " + std::to_string(m.n_head) +
                 " heads) is below suite.min_head_dim = " + std::to_string(suite.min_head_dim) +
                 "; lower suite.heads or raise the budget, or set suite.min_head_dim to train "
                 "it anyway");
  if (!solved) return;
  const double deviation = budget_deviation(suite, shape);
  if (std::abs(deviation) <= suite.budget_tolerance) return;
  char text[256];
  std::snprintf(text, sizeof text,
                ": the nearest width d_model = %d has %s parameters (%s), %+.1f%% from "
                "suite.budget %s, beyond suite.budget_tolerance %g%% (the runs would not be "
                "iso-parameter)",
                m.d_model,
                count_text(double(*suite.budget_kind == BudgetKind::total ? shape.counts.total
                                                                          : shape.counts.backbone))
                    .c_str(),
                *suite.budget_kind == BudgetKind::total ? "total" : "backbone", 100 * deviation,
                count_text(suite.budget).c_str(), 100 * suite.budget_tolerance);
  const std::string budgets = working_budgets(suite);
  throw Error(where + text +
              (budgets.empty()
                   ? std::string("; no budget within a factor of 4 fits every depth: change "
                                 "suite.depths or suite.heads")
                   : "; budgets within it at every depth: " + budgets +
                         " (or raise suite.budget_tolerance)"));
}

// The suite's seeds, or one entry "the recipe's seed" when it names none.
std::vector<std::optional<uint64_t>> seed_axis(const Suite& suite) {
  if (suite.seeds.empty()) return {std::nullopt};
  return {suite.seeds.begin(), suite.seeds.end()};
}

}  // namespace

std::vector<Shape> suite_shapes(const Suite& suite) {
  const int vocab = suite.base.model.vocab_size;
  std::vector<Shape> shapes;
  for (int depth : suite.depths) {
    const std::string where = suite.source + ": suite.depths " + std::to_string(depth);
    try {
      shapes.push_back(solve_shape(suite.budget, *suite.budget_kind, depth, suite.rule, vocab));
    } catch (const Error& e) {
      throw Error(where + ": " + e.what());
    }
    check_shape(suite, shapes.back(), /*solved=*/true, where);
  }
  for (const auto& [depth, width] : suite.shapes) {
    const std::string where =
        suite.source + ": suite.shapes " + std::to_string(depth) + "x" + std::to_string(width);
    try {
      shapes.push_back(make_shape(depth, width, suite.rule, vocab));
    } catch (const Error& e) {
      throw Error(where + ": " + e.what());
    }
    check_shape(suite, shapes.back(), /*solved=*/false, where);
  }
  return shapes;
}

std::vector<PlannedRun> plan_suite(const Suite& suite, const std::string& out_dir) {
  std::vector<PlannedRun> runs;
  for (const Shape& shape : suite_shapes(suite)) {
    for (const std::string& design : suite.designs) {
      for (double lr : suite.learning_rates(design))
        for (const std::optional<uint64_t> seed : seed_axis(suite)) {
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
          if (seed) {  // the seed axis: one run per seed, the seed part of its name
            c.seed = *seed;
            c.name = c.derived_name() + "__s" + std::to_string(*seed);
          }
          Recipe& r = c.recipe;
          if (!suite.steps_fixed) {  // Chinchilla: tokens_per_parameter tokens per (Pre-LN)
                                     // parameter of the shape
            const double tokens = suite.tokens_per_parameter * double(shape.counts.total);
            r.steps =
                std::max<int64_t>(1, int64_t(std::ceil(tokens / double(r.tokens_per_step()))));
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
