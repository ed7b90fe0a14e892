// §3 LNS — LayerNorm Scaling (arXiv 2502.05795): Pre-LN whose block-norm outputs (after the
// gain) are multiplied by s_b = 1/sqrt(b+1), b the 0-based block index, shared by both
// sublayers of the block; the final norm is not scaled. s_b belongs to the block's parameters
// (b = param_block(p)), so it travels with the block on a swap (diagnostics.md "Swap").
#include <cmath>

#include "model/residual/design.hpp"
#include "model/residual/stream.hpp"

namespace db {
namespace {

template <class T>
class Lns : public ResidualDesign<T> {
 public:
  explicit Lns(const ModelConfig& c) : stream_(c), block_scale_(c.n_layer) {
    for (int b = 0; b < c.n_layer; ++b) block_scale_[b] = 1.0 / std::sqrt(double(b + 1));
  }

  static void declare(ParameterLayout& layout, const ModelConfig& c) {
    declare_block_norms(layout, c, {"attn_norm", "ffn_norm"});
  }

  void forward(Backbone<T>& net, const T* x0, T* features) override {
    stream_.forward(net, x0, features, &block_scale_);
  }
  void backward(Backbone<T>& net, const T* dfeatures, T* dx0) override {
    stream_.backward(net, dfeatures, dx0, &block_scale_);
  }

 private:
  PreNormStream<T> stream_;
  std::vector<double> block_scale_;  // indexed by parameter block
};

}  // namespace

DesignInfo lns_design() {
  return make_design_info<Lns>(
      {.name = "lns",
       .title = "LNS",
       .summary = "LayerNorm Scaling: Pre-LN with norm outputs · 1/sqrt(b+1)"});
}

}  // namespace db
