// §4 DeepNorm (DeepNet, arXiv 2203.00555): Post-LN with an up-weighted skip and no pre-norm,
//   h = N_a(α·x + Attn(x));  x' = N_f(α·h + FFN(h));  final RMSNorm,
// α = (2L)^{1/4}; β = (8L)^{-1/4} only scales the init std of W_v, W_o, W1, W2, W3 (W_q, W_k keep
// 0.02). Choice (authors' code): the block norms are bias-free LayerNorm, `deepnorm_norm`.
#include <cmath>

#include "core/error.hpp"
#include "model/residual/design.hpp"
#include "model/residual/stream.hpp"
#include "model/residual/sublayer.hpp"

namespace db {
namespace {

double deepnorm_alpha(const ModelConfig& c) {
  return derived_option(c, "deepnorm_alpha", std::pow(2.0 * c.n_layer, 0.25));
}
double deepnorm_beta(const ModelConfig& c) {
  return derived_option(c, "deepnorm_beta", std::pow(8.0 * c.n_layer, -0.25));
}
bool deepnorm_layernorm(const ModelConfig& c) {
  const std::string kind = c.option("deepnorm_norm", std::string("layernorm"));
  DB_REQUIRE(kind == "layernorm" || kind == "rmsnorm",
             "deepnorm_norm must be layernorm or rmsnorm, not '" + kind + "'");
  return kind == "layernorm";
}

template <class T>
class DeepNorm : public ResidualDesign<T> {
 public:
  explicit DeepNorm(const ModelConfig& c)
      : stack_(c, [alpha = deepnorm_alpha(c), layer = deepnorm_layernorm(c)](const Backbone<T>&,
                                                                             int, bool ffn) {
          SublayerForm f;
          f.out_norm = ffn ? "ffn_norm" : "attn_norm";  // the post-norms
          f.out_layernorm = layer;
          f.alpha = alpha;
          return f;
        }) {}

  static void declare(ParameterLayout& layout, const ModelConfig& c) {
    deepnorm_layernorm(c);  // reject a bad option before any run starts
    declare_block_norms(layout, c, {"attn_norm", "ffn_norm"});
    const double std = c.init_std * deepnorm_beta(c);  // truncation follows the std (±3σ)
    for (int b = 0; b < c.n_layer; ++b)
      for (const char* name : {"wv", "wo", "w1", "w2", "w3"})
        layout.set_init_std("blocks." + std::to_string(b) + "." + name, std);
  }

  void forward(Backbone<T>& net, const T* x0, T* features) override {
    run_layers_forward(net, stack_, x0, features);
  }
  void backward(Backbone<T>& net, const T* dfeatures, T* dx0) override {
    run_layers_backward(net, stack_, dfeatures, dx0);
  }

 private:
  SublayerStack<T> stack_;
};

}  // namespace

DesignInfo deepnorm_design() {
  using V = OptionValues;
  return make_design_info<DeepNorm>(
      {.name = "deepnorm",
       .title = "DeepNorm",
       .summary = "DeepNorm: Post-LN N(α·x + F(x)), β-scaled init",
       .section = 4,
       .options = {
           {"deepnorm_alpha", "auto", "skip weight α; auto = (2L)^(1/4)",
            V::real_above(0, {"auto", ""})},
           {"deepnorm_beta", "auto", "init scale β of wv, wo, w1, w2, w3; auto = (8L)^(-1/4)",
            V::real_above(0, {"auto", ""})},
           {"deepnorm_norm", "layernorm", "block post-norms: layernorm (bias-free) | rmsnorm",
            V::one_of({"layernorm", "rmsnorm"})}}});
}

}  // namespace db
