// The single pre-norm residual stream shared by Pre-LN (§1), LNS (§3) and MoDA (§6):
// h = x + Attn(s_b·N_a(x)); x' = h + FFN(s_b·N_f(h)); features = N_final(x_L).
// s_b is 1 except for LNS; it belongs to the block's parameters, so it travels on a swap.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "model/backbone.hpp"

namespace db {

// Declares `blocks.{i}.{name}` RMSNorm gains (init 1) for every block and name.
inline void declare_block_norms(ParameterLayout& layout, const ModelConfig& c,
                                const std::vector<std::string>& names) {
  for (int b = 0; b < c.n_layer; ++b)
    for (const std::string& name : names)
      layout.add_constant("blocks." + std::to_string(b) + "." + name, {c.d_model}, 1.0);
}

// acc += x and x ·= s through the backend.
template <class T>
void add_into(Ops<T>& ops, T* acc, const T* x, int64_t count) {
  ops.axpby(acc, T(1), x, T(1), count);
}
template <class T>
void scale_into(Ops<T>& ops, T* x, double s, int64_t count) {
  if (s != 1.0) ops.axpby(x, T(s), x, T(0), count);
}

template <class T>
class PreNormStream {
 public:
  explicit PreNormStream(const ModelConfig& c) : attn_norm_(c.n_layer), ffn_norm_(c.n_layer) {}

  // block_scale[b] multiplies the norm outputs of parameter block b (null: all 1).
  void forward(Backbone<T>& net, const T* x0, T* features, const std::vector<double>* block_scale) {
    const int64_t count = net.rows() * net.d();
    x_.assign(x0, count);
    u_.resize(count);
    y_.resize(count);
    net.observe_depth_state(0, x_.data());
    for (int p = 0; p < net.n_layer(); ++p) {
      if (!net.skipped(p)) {
        const double s = block_scale ? (*block_scale)[net.param_block(p)] : 1.0;
        sublayer_forward(net, p, /*ffn=*/false, s);
        sublayer_forward(net, p, /*ffn=*/true, s);
      }
      net.observe_depth_state(p + 1, x_.data());
    }
    net.rmsnorm_forward(net.layout().id("final_norm"), x_.data(), features, final_norm_, net.rows(),
                        net.d());
  }

  void backward(Backbone<T>& net, const T* dfeatures, T* dx0,
                const std::vector<double>* block_scale) {
    const int64_t count = net.rows() * net.d();
    dx_.resize(count);
    du_.resize(count);
    net.rmsnorm_backward(net.layout().id("final_norm"), dfeatures, dx_.data(), final_norm_,
                         net.rows(), net.d());
    for (int p = net.n_layer() - 1; p >= 0; --p) {
      if (net.skipped(p)) continue;
      const double s = block_scale ? (*block_scale)[net.param_block(p)] : 1.0;
      sublayer_backward(net, p, /*ffn=*/true, s);
      sublayer_backward(net, p, /*ffn=*/false, s);
    }
    net.ops().copy(dx0, dx_.data(), count);
  }

  // The stream's current state (valid after forward), for designs that read it.
  const Buffer<T>& state() const { return x_; }

 private:
  void sublayer_forward(Backbone<T>& net, int p, bool ffn, double s) {
    const int64_t count = net.rows() * net.d();
    const int gain = net.block_param(p, ffn ? "ffn_norm" : "attn_norm");
    net.rmsnorm_forward(gain, x_.data(), u_.data(), (ffn ? ffn_norm_ : attn_norm_)[p], net.rows(),
                        net.d());
    scale_into(net.ops(), u_.data(), s, count);
    if (ffn)
      net.ffn_forward(p, u_.data(), y_.data());
    else
      net.attention_forward(p, u_.data(), y_.data());
    net.observe_sublayer(2 * p + ffn, u_.data(), y_.data());
    add_into(net.ops(), x_.data(), y_.data(), count);
  }

  void sublayer_backward(Backbone<T>& net, int p, bool ffn, double s) {
    const int64_t count = net.rows() * net.d();
    if (ffn)
      net.ffn_backward(p, dx_.data(), du_.data());
    else
      net.attention_backward(p, dx_.data(), du_.data());
    scale_into(net.ops(), du_.data(), s, count);
    const int gain = net.block_param(p, ffn ? "ffn_norm" : "attn_norm");
    net.rmsnorm_backward(gain, du_.data(), dx_.data(), (ffn ? ffn_norm_ : attn_norm_)[p],
                         net.rows(), net.d(), /*accumulate_dx=*/true);
  }

  std::vector<NormCache<T>> attn_norm_, ffn_norm_;
  NormCache<T> final_norm_;
  Buffer<T> x_, u_, y_, dx_, du_;
};

}  // namespace db
