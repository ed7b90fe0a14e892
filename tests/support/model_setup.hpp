// A model's parameters moved off their init, for the model tests: initialize(7), then each value
// plus 0.05·(u − 0.5), so that zero-initialised mixers and unit norm gains carry values (and
// gradients) of their own.
#pragma once
#include <vector>

#include "core/rng.hpp"
#include "model/model.hpp"

namespace db::test {

template <class T>
void initialize_off_init(Model<T>& model) {
  model.initialize(7);
  std::vector<T> values = model.params().values_to_host();
  Rng jitter(11);
  for (T& x : values) x += T(0.05 * (jitter.uniform() - 0.5));
  model.params().copy_values_from_host(values);
}

}  // namespace db::test
