// §3 LNS — LayerNorm Scaling (arXiv 2502.05795): Pre-LN whose block-norm outputs (after the
// gain) are multiplied by s_b = 1/sqrt(b+1), b the 0-based block index, shared by both
// sublayers of the block; the final norm is not scaled. s_b belongs to the block's parameters
// (b = param_block(p)), so it travels with the block on a swap (diagnostics.md "Swap").
#include <cmath>

#include "model/residual/design.hpp"
#include "model/residual/stream.hpp"

namespace db {
namespace {

// s_b = 1/sqrt(b+1) of every parameter block b.
std::vector<double> lns_block_scales(const ModelConfig& c) {
  std::vector<double> scale(c.n_layer);
  for (int b = 0; b < c.n_layer; ++b) scale[b] = 1.0 / std::sqrt(double(b + 1));
  return scale;
}

template <class T>
class Lns : public ResidualDesign<T> {
 public:
  explicit Lns(const ModelConfig& c) : stream_(c, lns_block_scales(c)) {}

  static void declare(ParameterLayout& layout, const ModelConfig& c) {
    declare_block_norms(layout, c, {"attn_norm", "ffn_norm"});
  }

  void forward(Backbone<T>& net, const T* x0, T* features) override {
    run_layers_forward(net, stream_, x0, features);
  }
  void backward(Backbone<T>& net, const T* dfeatures, T* dx0) override {
    run_layers_backward(net, stream_, dfeatures, dx0);
  }

 private:
  PreNormStream<T> stream_;
};

}  // namespace

DesignInfo lns_design() {
  return make_design_info<Lns>(
      {.name = "lns",
       .title = "LNS",
       .summary = "LayerNorm Scaling: Pre-LN with norm outputs · 1/sqrt(b+1)",
       .section = 3});
}

}  // namespace db
