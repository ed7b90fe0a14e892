#include "model/residual/design.hpp"

#include <limits>
#include <string>

#include "core/error.hpp"
#include "model/residual/registry.hpp"

namespace db {

template <class T>
std::vector<double> ResidualDesign<T>::path_weights(const Backbone<T>& net) const {
  const DesignInfo& design = find_design(net.config().arch);
  DB_REQUIRE(design.branch_gates.empty(),
             "design " + design.name +
                 " gates its branches (branch_gates), so its paths do not all weigh 1: it must "
                 "override path_weights (gates.hpp: gated_stream_path_weights)");
  const int sublayers = 2 * net.n_layer();
  const int sources = sublayers + 1, consumers = sublayers + 1;
  std::vector<double> w(size_t(sources) * consumers, std::numeric_limits<double>::quiet_NaN());
  // Source s (0 = embedding, 1 + i = sublayer i) reaches consumer c (sublayer c or the readout)
  // when it was produced before c runs: s ≤ c.
  for (int s = 0; s < sources; ++s)
    for (int c = s; c < consumers; ++c) w[size_t(s) * consumers + c] = 1.0;
  return w;
}

template <class T>
void ResidualDesign<T>::readout_state(Backbone<T>& net, const T* state, int64_t rows, int width,
                                      T* features) {
  const int d = net.d();
  DB_REQUIRE(width == d, "depth state width " + std::to_string(width) + " is not d_model " +
                             std::to_string(d) + ": a multi-stream design overrides readout_state");
  const T* x = state;
  NormCache<T> cache;
  net.rmsnorm_forward(net.layout().id("final_norm"), x, features, cache, rows, d);
}

template class ResidualDesign<float>;
template class ResidualDesign<double>;

}  // namespace db
