// A model's parameters moved off their init, for the model tests: initialize(7), then each value
// plus 0.05·(u − 0.5), so that zero-initialised mixers and unit norm gains carry values (and
// gradients) of their own. A design's declared branch gates (DesignInfo::branch_gates, e.g.
// ReZero's α, initialised to 0) are set to 0.5 plus that noise instead: a gate near 0 would
// leave whatever it gates with gradients too small to show what a test looks for.
#pragma once
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"

namespace db::test {

// Whether the parameter's last name component is one of the design's branch gates.
inline bool is_branch_gate(const DesignInfo& design, const std::string& parameter) {
  const std::string last = parameter.substr(parameter.rfind('.') + 1);
  for (const std::string& gate : design.branch_gates)
    if (gate == last) return true;
  return false;
}

template <class T>
void initialize_off_init(Model<T>& model) {
  model.initialize(7);
  std::vector<T> values = model.params().values_to_host();
  Rng jitter(11);
  for (T& x : values) x += T(0.05 * (jitter.uniform() - 0.5));
  const DesignInfo& design = find_design(model.config().arch);
  for (const ParameterSpec& spec : model.layout().specs())
    if (is_branch_gate(design, spec.name))
      for (int64_t i = 0; i < spec.size(); ++i) values[spec.offset + i] += T(0.5);
  model.params().copy_values_from_host(values);
}

}  // namespace db::test
