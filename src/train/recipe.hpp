// The optimisation recipe of one run (spec: suites.md "Recipe").
#pragma once
#include <cstdint>

namespace db {

struct Recipe {
  double learning_rate = 2e-3;
  double min_lr_ratio = 0.1;     // cosine decays to 10% of the peak
  double warmup_fraction = 0.1;  // linear warm-up over the first 10% of steps
  double beta1 = 0.9, beta2 = 0.95, adam_eps = 1e-8;
  double weight_decay = 0.1;
  double grad_clip = 1.0;  // global-norm clipping; 0 disables
  int64_t steps = 100;
  int64_t global_batch_sequences = 8;
  int64_t micro_batch_sequences = 8;  // per rank and forward pass
  int seq_len = 128;

  int64_t warmup_steps() const { return int64_t(warmup_fraction * steps + 0.5); }
  int64_t tokens_per_step() const { return global_batch_sequences * seq_len; }
};

// Linear warm-up from 0 to the peak over warmup_steps, then cosine decay to min_lr_ratio·peak
// at the last step. `step` counts from 0.
double learning_rate_at(const Recipe& recipe, int64_t step);

}  // namespace db
