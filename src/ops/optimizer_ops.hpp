// The optimizer's element-wise work on every backend: the AdamW update and the sum of squares
// behind the global gradient norm, on arrays in host or GPU memory (core/memory.hpp).
#pragma once
#include <cstdint>

#include "core/memory.hpp"

namespace db {

struct AdamWUpdate {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;       // 1-based: bias corrections 1 − βᵗ
  double clip_scale;  // gradients are multiplied by it first (≤ 1)
};

// torch.optim.AdamW: decoupled decay (where decay[i]) first, then the Adam update; m and v are
// fp32 state. All pointers live in `space`; double runs on the host only.
void adamw_update(MemorySpace space, float* values, const float* grads, float* m, float* v,
                  const uint8_t* decay, int64_t count, const AdamWUpdate& u);
void adamw_update(MemorySpace space, double* values, const double* grads, float* m, float* v,
                  const uint8_t* decay, int64_t count, const AdamWUpdate& u);

// Σ x², accumulated in double in a fixed order (the same value on any thread count).
double sum_of_squares(MemorySpace space, const float* x, int64_t count);
double sum_of_squares(MemorySpace space, const double* x, int64_t count);

}  // namespace db
