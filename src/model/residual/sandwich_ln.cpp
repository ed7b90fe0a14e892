// §2 Sandwich-LN (Peri-LN; CogView, Gemma 2/3): the branch output is normalised too,
// h = x + N_a,post(Attn(N_a,pre(x))); x' = h + N_f,post(FFN(N_f,pre(h))); final norm.
#include "model/residual/design.hpp"
#include "model/residual/stream.hpp"
#include "model/residual/sublayer.hpp"

namespace db {
namespace {

template <class T>
class SandwichLn : public ResidualDesign<T> {
 public:
  explicit SandwichLn(const ModelConfig& c) : stack_(c, &form) {}

  static void declare(ParameterLayout& layout, const ModelConfig& c) {
    declare_block_norms(layout, c, {"attn_norm", "attn_post_norm", "ffn_norm", "ffn_post_norm"});
  }

  void forward(Backbone<T>& net, const T* x0, T* features) override {
    run_layers_forward(net, stack_, x0, features);
  }
  void backward(Backbone<T>& net, const T* dfeatures, T* dx0) override {
    run_layers_backward(net, stack_, dfeatures, dx0);
  }

 private:
  static SublayerForm form(const Backbone<T>&, int, bool ffn) {
    SublayerForm f;
    f.in_norm = ffn ? "ffn_norm" : "attn_norm";
    f.branch_norm = ffn ? "ffn_post_norm" : "attn_post_norm";
    return f;
  }

  SublayerStack<T> stack_;
};

}  // namespace

DesignInfo sandwich_ln_design() {
  return make_design_info<SandwichLn>(
      {.name = "sandwich_ln",
       .title = "Sandwich-LN",
       .summary = "Sandwich-LN / Peri-LN: x + N_post(F(N_pre(x))), final norm",
       .section = 2});
}

}  // namespace db
