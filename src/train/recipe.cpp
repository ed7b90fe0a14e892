#include "train/recipe.hpp"

#include <algorithm>
#include <cmath>

namespace db {

double learning_rate_at(const Recipe& r, int64_t step) {
  const int64_t warmup = r.warmup_steps();
  if (step < warmup) return r.learning_rate * double(step + 1) / double(warmup);
  const int64_t decay_steps = std::max<int64_t>(1, r.steps - warmup - 1);
  const double progress = std::min(1.0, double(step - warmup) / double(decay_steps));
  const double floor = r.min_lr_ratio * r.learning_rate;
  return floor + (r.learning_rate - floor) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace db
