// AdamW with decoupled weight decay (torch.optim.AdamW semantics) and global-norm clipping, on
// any backend: the moments live beside the parameters (host or GPU memory) and the update runs
// there (Backend::adamw_update, ops/backend.hpp). Moments are fp32 (master state); parameters
// without weight decay are those the layout marks (HC/mHC static routing, spec suites.md).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "core/buffer.hpp"
#include "model/parameters.hpp"
#include "train/recipe.hpp"

namespace db {

// L2 norm of an array, summed in double in a fixed order.
template <class T>
double global_norm(std::span<const T> grads);
// L2 norm of all parameter gradients; the padding between parameters does not change it.
template <class T>
double global_norm(const ParameterStore<T>& params);

template <class T>
class AdamW {
 public:
  // State is allocated in `space`, which must be the parameters' space.
  AdamW(const ParameterLayout& layout, const Recipe& recipe, MemorySpace space = MemorySpace::host);

  // One update with learning rate lr; gradients are scaled by clip_scale first (≤ 1).
  void step(ParameterStore<T>& params, double lr, double clip_scale);

  int64_t steps_taken() const { return t_; }
  void set_steps_taken(int64_t t) { t_ = t; }
  // Optimizer state for checkpoints, in host memory: the first and second moments.
  std::vector<float> first_moment() const { return m_.to_host(); }
  std::vector<float> second_moment() const { return v_.to_host(); }
  void set_moments(const std::vector<float>& m, const std::vector<float>& v);

 private:
  Recipe recipe_;
  Buffer<uint8_t> decay_;  // per element: weight decay applies
  Buffer<float> m_, v_;
  int64_t t_ = 0;
};

}  // namespace db
