// The single residual stream x [rows, d] of the single-stream designs (x_0 = the embedding,
// features = N_final(x_L)), and the pre-norm sublayer on it shared by Pre-LN (§1) and LNS (§3):
// h = x + Attn(s_b·N_a(x)); x' = h + FFN(s_b·N_f(h)).
// s_b is 1 except for LNS; it belongs to the block's parameters, so it travels on a swap.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "model/backbone.hpp"
#include "model/residual/layer_loop.hpp"

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

// The state of a single-stream design for the layer loop (layer_loop.hpp): x_ from the
// embedding, every depth state is x_, the readout is the final RMSNorm, dx_ its gradient. A
// design adds its sublayers, which read and update x_ (forward) and dx_ (backward).
template <class T>
class SingleStream : public LayerMixing<T> {
 public:
  void begin_forward(Backbone<T>& net, const T* x0) override {
    x_.assign(x0, net.rows() * net.d());
  }
  DepthState<T> depth_state(Backbone<T>& net, int /*l*/) override { return {x_.data(), net.d()}; }
  void readout_forward(Backbone<T>& net, T* features) override {
    net.rmsnorm_forward(net.layout().id("final_norm"), x_.data(), features, final_norm_, net.rows(),
                        net.d());
  }
  void readout_backward(Backbone<T>& net, const T* dfeatures) override {
    dx_.resize(net.rows() * net.d());
    net.rmsnorm_backward(net.layout().id("final_norm"), dfeatures, dx_.data(), final_norm_,
                         net.rows(), net.d());
  }
  void end_backward(Backbone<T>& net, T* dx0) override {
    net.ops().copy(dx0, dx_.data(), net.rows() * net.d());
  }

 protected:
  Buffer<T> x_, dx_;  // the stream [rows, d]; ∂loss/∂x of the sublayer being differentiated

 private:
  NormCache<T> final_norm_;
};

template <class T>
class PreNormStream : public SingleStream<T> {
 public:
  // block_scale[b] multiplies the norm outputs of parameter block b (empty: all 1).
  explicit PreNormStream(const ModelConfig& c, std::vector<double> block_scale = {})
      : attn_norm_(c.n_layer), ffn_norm_(c.n_layer), block_scale_(std::move(block_scale)) {}

  SublayerIO<T> sublayer_forward(Backbone<T>& net, int p, bool ffn) override {
    const int64_t count = net.rows() * net.d();
    u_.resize(count);
    y_.resize(count);
    const int gain = net.block_param(p, ffn ? "ffn_norm" : "attn_norm");
    net.rmsnorm_forward(gain, x_.data(), u_.data(), (ffn ? ffn_norm_ : attn_norm_)[p], net.rows(),
                        net.d());
    scale_into(net.ops(), u_.data(), scale(net, p), count);
    if (ffn)
      net.ffn_forward(p, u_.data(), y_.data());
    else
      net.attention_forward(p, u_.data(), y_.data());
    return {u_.data(), y_.data()};
  }

  void sublayer_merge(Backbone<T>& net, int, bool) override {
    add_into(net.ops(), x_.data(), y_.data(), net.rows() * net.d());
  }

  // dx_ holds ∂/∂x' on entry and ∂/∂x on return.
  void sublayer_backward(Backbone<T>& net, int p, bool ffn) override {
    const int64_t count = net.rows() * net.d();
    du_.resize(count);
    if (ffn)
      net.ffn_backward(p, dx_.data(), du_.data());
    else
      net.attention_backward(p, dx_.data(), du_.data());
    scale_into(net.ops(), du_.data(), scale(net, p), count);
    const int gain = net.block_param(p, ffn ? "ffn_norm" : "attn_norm");
    net.rmsnorm_backward(gain, du_.data(), dx_.data(), (ffn ? ffn_norm_ : attn_norm_)[p],
                         net.rows(), net.d(), /*accumulate_dx=*/true);
  }

 private:
  using SingleStream<T>::x_;
  using SingleStream<T>::dx_;

  double scale(const Backbone<T>& net, int p) const {
    return block_scale_.empty() ? 1.0 : block_scale_[net.param_block(p)];
  }

  std::vector<NormCache<T>> attn_norm_, ffn_norm_;
  std::vector<double> block_scale_;  // by parameter block
  Buffer<T> u_, y_, du_;
};

}  // namespace db
