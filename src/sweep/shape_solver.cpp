#include "sweep/shape_solver.hpp"

#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "model/model.hpp"

namespace db::sweep {

ShapeRule ShapeRule::named(const std::string& name, int n_head) {
  DB_REQUIRE(n_head >= 1, "suite.heads must be at least 1");
  ShapeRule rule;
  rule.name = name;
  rule.n_head = n_head;
  if (name == "sub1b") return rule;
  if (name == "1p6b") {  // Qwen3-1.7B attention: GQA with half as many KV heads, ff = 3d, QK-norm
    DB_REQUIRE(n_head % 2 == 0, "suite.shape_rule = 1p6b needs an even suite.heads");
    rule.n_kv_head = n_head / 2;
    rule.ff_is_3d = true;
    rule.qk_norm = true;
    return rule;
  }
  throw Error("suite.shape_rule: '" + name + "' is not sub1b or 1p6b");
}

Shape make_shape(int n_layer, int d_model, const ShapeRule& rule, int vocab_size) {
  Shape shape;
  ModelConfig& m = shape.model;
  m.arch = "pre_ln";
  m.n_layer = n_layer;
  m.d_model = d_model;
  m.n_head = rule.n_head;
  m.n_kv_head = rule.n_kv_head;
  m.ff = rule.ff_is_3d ? 3 * d_model : ModelConfig::ffn_hidden_sub1b(d_model);
  m.qk_norm = rule.qk_norm;
  m.vocab_size = vocab_size;
  m.validate();
  shape.counts = count_parameters(m);
  return shape;
}

namespace {
std::string format_count(double count) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", count);
  return text;
}
}  // namespace

Shape solve_shape(double budget, BudgetKind kind, int n_layer, const ShapeRule& rule,
                  int vocab_size) {
  DB_REQUIRE(budget > 0 && n_layer >= 1, "shape solver: budget and depth must be positive");
  const auto count = [&](int64_t k) {
    const Shape s = make_shape(n_layer, int(k * rule.width_step()), rule, vocab_size);
    return double(kind == BudgetKind::total ? s.counts.total : s.counts.backbone);
  };
  // The count grows with d = k·step: bisect k over a bounded grid (widths up to 2^20), then keep
  // the nearer of the two widths around the budget.
  const int64_t max_k = (int64_t(1) << 20) / rule.width_step();
  DB_REQUIRE(count(max_k) >= budget,
             "suite.budget of " + format_count(budget) + " parameters needs d_model > " +
                 std::to_string(max_k * rule.width_step()) + " at L = " + std::to_string(n_layer) +
                 ", beyond what DepthBench trains");
  // Below the narrowest width the depth alone outgrows the budget (L = 100000 at 60K): no width
  // meets it, and the nearest one would silently plan a model many times the budget.
  const double smallest = count(1);
  DB_REQUIRE(smallest <= budget,
             "suite.budget of " + format_count(budget) +
                 " parameters is below the narrowest shape at L = " + std::to_string(n_layer) +
                 " (d_model = " + std::to_string(rule.width_step()) + " has " +
                 format_count(smallest) + ", " + format_count(smallest / budget) +
                 " times the budget); lower the depth or raise the budget");
  int64_t low = 1, high = max_k;  // invariant: count(low) <= budget <= count(high)
  while (high - low > 1) {
    const int64_t mid = low + (high - low) / 2;
    (count(mid) >= budget ? high : low) = mid;
  }
  const int64_t k = std::abs(count(low) - budget) <= std::abs(count(high) - budget) ? low : high;
  return make_shape(n_layer, int(k * rule.width_step()), rule, vocab_size);
}

}  // namespace db::sweep
