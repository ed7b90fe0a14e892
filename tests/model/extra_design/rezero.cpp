// ReZero (Bachlechner et al. 2020, arXiv 2003.04887), the eleventh design of the test
// model.extra_design_in_one_file: one file, dropped into a build as if into src/model/residual/
// (CMake: DEPTHBENCH_EXTRA_DESIGN_DIR), with no other edit anywhere; every test that loops over
// the registered designs then runs it too.
//   h = x + α_a·Attn(x);  x' = h + α_f·FFN(h);  features = N_final(x_L).
// No pre-norm; α one learned scalar per sublayer (`blocks.{i}.attn_alpha`, `ffn_alpha` [1]),
// initialised to 0, so every block starts as the identity; no weight decay on α.
#include "model/residual/design.hpp"
#include "model/residual/gates.hpp"
#include "model/residual/stream.hpp"

namespace db {
namespace {

template <class T>
class ReZero : public ResidualDesign<T>, public SingleStream<T> {
 public:
  explicit ReZero(const ModelConfig& c) : y_(2 * c.n_layer), out_(2 * c.n_layer) {}

  static void declare(ParameterLayout& layout, const ModelConfig& c) {
    for (int b = 0; b < c.n_layer; ++b)
      for (const char* alpha : {"attn_alpha", "ffn_alpha"})
        layout.add_constant("blocks." + std::to_string(b) + "." + alpha, {1}, 0.0);
  }

  void forward(Backbone<T>& net, const T* x0, T* features) override {
    run_layers_forward(net, *this, x0, features);
  }
  void backward(Backbone<T>& net, const T* dfeatures, T* dx0) override {
    run_layers_backward(net, *this, dfeatures, dx0);
  }
  std::vector<double> path_weights(const Backbone<T>& net) const override {
    return gated_stream_path_weights(net, [&](int k) { return alpha(net, k / 2, k % 2); });
  }

  // y = F(x): the core reads the stream itself, which stays unchanged (SingleStream's rule).
  SublayerIO<T> sublayer_forward(Backbone<T>& net, int p, bool ffn) override {
    Buffer<T>& y = y_[2 * p + ffn];
    y.resize(net.rows() * net.d());
    if (ffn)
      net.ffn_forward(p, this->x_, y.data());
    else
      net.attention_forward(p, this->x_, y.data());
    return {this->x_, y.data()};
  }
  // x' = x + α·y into a buffer of the sublayer's own.
  void sublayer_merge(Backbone<T>& net, int p, bool ffn) override {
    Buffer<T>& out = out_[2 * p + ffn];
    out.resize(net.rows() * net.d());
    gated_add_forward(net, alpha(net, p, ffn), out.data(), this->x_, y_[2 * p + ffn].data());
    this->x_ = out.data();
  }
  // dx_ holds ∂/∂x' on entry and ∂/∂x on return: ∂/∂x' + F's backward of α·∂/∂x'.
  void sublayer_backward(Backbone<T>& net, int p, bool ffn) override {
    const int64_t count = net.rows() * net.d();
    dy_.resize(count);
    du_.resize(count);
    gated_add_backward(net, alpha(net, p, ffn), dy_.data(), this->dx_.data(),
                       y_[2 * p + ffn].data());
    if (ffn)
      net.ffn_backward(p, dy_.data(), du_.data());
    else
      net.attention_backward(p, dy_.data(), du_.data());
    net.ops().axpby(this->dx_.data(), T(1), du_.data(), T(1), count);
  }
  // train.recompute = blocks: keep only the block's output, the next block's input.
  void release_block(Backbone<T>&, int p) override {
    for (int k : {2 * p, 2 * p + 1}) {
      y_[k] = {};
      release_unless(out_[k], this->x_);
    }
  }

 private:
  static int alpha(const Backbone<T>& net, int p, bool ffn) {
    return net.block_param(p, ffn ? "ffn_alpha" : "attn_alpha");
  }

  std::vector<Buffer<T>> y_;    // each sublayer's branch output, for α's gradient
  std::vector<Buffer<T>> out_;  // the stream after each sublayer
  Buffer<T> dy_, du_;
};

}  // namespace

DesignInfo rezero_design() {
  return make_design_info<ReZero>({.name = "rezero",
                                   .title = "ReZero",
                                   .summary = "ReZero: x + α·F(x), α a scalar per sublayer, init 0",
                                   .no_decay = {"attn_alpha", "ffn_alpha"},
                                   .branch_gates = {"attn_alpha", "ffn_alpha"}});
}

}  // namespace db
