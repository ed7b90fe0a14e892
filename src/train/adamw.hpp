// AdamW with decoupled weight decay (torch.optim.AdamW semantics) and global-norm clipping.
// Moments are kept in float (fp32 master state); parameters without weight decay are those the
// layout marks (HC/mHC static routing, spec suites.md).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "model/parameters.hpp"
#include "train/recipe.hpp"

namespace db {

// L2 norm of all gradients, summed in double in a fixed order.
template <class T>
double global_norm(std::span<const T> grads);

template <class T>
class AdamW {
 public:
  AdamW(const ParameterLayout& layout, const Recipe& recipe);

  // One update with learning rate lr; gradients are scaled by clip_scale first (≤ 1).
  void step(std::span<T> values, std::span<const T> grads, double lr, double clip_scale);

  int64_t steps_taken() const { return t_; }
  // Optimizer state for checkpoints: [m | v] and the step counter.
  std::vector<float>& first_moment() { return m_; }
  std::vector<float>& second_moment() { return v_; }
  void set_steps_taken(int64_t t) { t_ = t; }

 private:
  Recipe recipe_;
  std::vector<uint8_t> decay_;  // per element: weight decay applies
  std::vector<float> m_, v_;
  int64_t t_ = 0;
};

}  // namespace db
