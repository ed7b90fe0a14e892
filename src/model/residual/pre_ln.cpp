// §1 Pre-LN (the baseline): h = x + Attn(N_a(x)); x' = h + FFN(N_f(h)); final norm.
#include <algorithm>

#include "model/residual/design.hpp"
#include "model/residual/stream.hpp"

namespace db {
namespace {

template <class T>
class PreLn : public ResidualDesign<T> {
 public:
  explicit PreLn(const ModelConfig& c) : stream_(c) {}

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

DesignInfo pre_ln_design() {
  return make_design_info<PreLn>({.name = "pre_ln",
                                  .title = "Pre-LN",
                                  .summary = "Pre-LN baseline: x + F(N(x)), final norm",
                                  .section = 1});
}

}  // namespace db
