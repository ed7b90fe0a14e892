// §5 KEEL ("Post-LayerNorm Is Back", arXiv 2601.19895): Post-LN with a constant highway skip
// weight and two norms per sublayer,
//   h = N_a,out(α·x + Attn(N_a,in(x)));  x' = N_f,out(α·h + FFN(N_f,in(h)));  final norm,
// α = 2L (the number of sublayers, authors' code; `keel_alpha`). Block 0 is special: plain
// Pre-LN attention (no out-norm, no α) and an FFN with α = 1, so it has three norms. The
// special form belongs to the parameters of block 0 (it lacks `attn_out_norm`), so it
// travels with them on a swap.
#include "model/residual/design.hpp"
#include "model/residual/stream.hpp"
#include "model/residual/sublayer.hpp"

namespace db {
namespace {

double keel_alpha(const ModelConfig& c) {
  return derived_option(c, "keel_alpha", 2.0 * c.n_layer);
}

template <class T>
class Keel : public ResidualDesign<T> {
 public:
  explicit Keel(const ModelConfig& c)
      : stack_(c, [alpha = keel_alpha(c)](const Backbone<T>& net, int p, bool ffn) {
          const bool first = net.param_block(p) == 0;
          SublayerForm f;
          f.in_norm = ffn ? "ffn_norm" : "attn_norm";
          if (ffn) {
            f.out_norm = "ffn_out_norm";
            f.alpha = first ? 1.0 : alpha;
          } else if (!first) {
            f.out_norm = "attn_out_norm";
            f.alpha = alpha;
          }
          return f;
        }) {}

  static void declare(ParameterLayout& layout, const ModelConfig& c) {
    for (int b = 0; b < c.n_layer; ++b) {
      const std::string block = "blocks." + std::to_string(b) + ".";
      layout.add_constant(block + "attn_norm", {c.d_model}, 1.0);
      if (b > 0) layout.add_constant(block + "attn_out_norm", {c.d_model}, 1.0);
      layout.add_constant(block + "ffn_norm", {c.d_model}, 1.0);
      layout.add_constant(block + "ffn_out_norm", {c.d_model}, 1.0);
    }
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

DesignInfo keel_design() {
  return make_design_info<Keel>(
      {.name = "keel",
       .title = "KEEL",
       .summary = "KEEL: Post-LN N_out(α·x + F(N_in(x))), α = 2L",
       .section = 5,
       .options = {{"keel_alpha", "auto", "highway skip weight α; auto = 2L",
                    OptionValues::real_above(0, {"auto", ""})}}});
}

}  // namespace db
