#include "sweep/shape_solver.hpp"

#include <cmath>

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

Shape solve_shape(double budget, BudgetKind kind, int n_layer, const ShapeRule& rule,
                  int vocab_size) {
  DB_REQUIRE(budget > 0 && n_layer >= 1, "shape solver: budget and depth must be positive");
  const auto count = [&](const Shape& s) {
    return double(kind == BudgetKind::total ? s.counts.total : s.counts.backbone);
  };
  // The count grows with d, so walk the grid until it passes the budget and keep the nearer side.
  const int step = rule.width_step();
  Shape best = make_shape(n_layer, step, rule, vocab_size);
  for (int d = 2 * step; count(best) < budget; d += step) {
    Shape next = make_shape(n_layer, d, rule, vocab_size);
    if (count(next) >= budget) {
      if (std::abs(count(next) - budget) < std::abs(count(best) - budget)) best = next;
      break;
    }
    best = next;
  }
  return best;
}

}  // namespace db::sweep
