// The shape solver (spec: suites.md, "Shape rule"): for a parameter budget and a depth L it picks
// the width d on the grid d = n_head·head_dim, head_dim even, whose exact Pre-LN parameter count
// (db::count_parameters, architectures.md §0) is nearest the budget. doc/suites.md explains the
// rule and the tables it reproduces.
#pragma once
#include <cstdint>
#include <string>

#include "model/model_config.hpp"

namespace db::sweep {

// How a width turns into a full shape: heads, KV heads, SwiGLU size, QK-norm.
struct ShapeRule {
  std::string name = "sub1b";  // sub1b: MHA, ff = ceil16(8d/3) | 1p6b: GQA 16/8, ff = 3d, QK-norm
  int n_head = 16;
  int n_kv_head = 0;  // 0 = n_head (MHA)
  bool ff_is_3d = false;
  bool qk_norm = false;

  // "sub1b" or "1p6b" with n_head heads (the 1p6b rule keeps n_head / 2 KV heads).
  static ShapeRule named(const std::string& name, int n_head);
  // The grid step of d: n_head · 2 (head_dim even).
  int width_step() const { return 2 * n_head; }
};

enum class BudgetKind { total, backbone };

struct Shape {
  ModelConfig model;  // arch pre_ln; the design is set per run
  ParameterCounts counts;
  int n_layer() const { return model.n_layer; }
  int d_model() const { return model.d_model; }
};

// The shape of depth n_layer and width d_model under the rule (counted as Pre-LN).
Shape make_shape(int n_layer, int d_model, const ShapeRule& rule, int vocab_size);

// The width on the rule's grid whose Pre-LN count (total or backbone) is nearest `budget`;
// the smaller width wins an exact tie. Throws when no width brackets the budget: even the
// narrowest shape of this depth has more parameters, or the widest (d = 2^20) fewer.
Shape solve_shape(double budget, BudgetKind kind, int n_layer, const ShapeRule& rule,
                  int vocab_size);

}  // namespace db::sweep
