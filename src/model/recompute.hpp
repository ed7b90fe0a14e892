// train.recompute: what the forward keeps for the backward (doc/designs.md "Recomputation").
// none: every block's activations. blocks: only what each block needs to be re-run (its input
// state); the backward re-runs a block's forward just before its backward, so the gradients are
// the same bits for one extra forward (≈ +33% FLOPs).
#pragma once
#include <string>

#include "core/error.hpp"

namespace db {

enum class Recompute { none, blocks };

inline Recompute parse_recompute(const std::string& name) {
  if (name == "none") return Recompute::none;
  if (name == "blocks") return Recompute::blocks;
  throw Error("train.recompute must be none or blocks, not '" + name + "'");
}

inline const char* recompute_name(Recompute r) {
  return r == Recompute::blocks ? "blocks" : "none";
}

}  // namespace db
