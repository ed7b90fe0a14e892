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

// Frees a buffer of a block's activations unless it holds `keep`, the block's output (the state
// the next block reads), under train.recompute = blocks.
template <class T>
void release_unless(Buffer<T>& buffer, const T* keep) {
  if (buffer.data() != keep) buffer = {};
}

// The state of a single-stream design for the layer loop (layer_loop.hpp): the stream x from the
// embedding, every depth state is x, the readout is the final RMSNorm, dx_ its gradient. A
// design adds its sublayers, which read x_ and write the new stream into a buffer of their own
// (forward), and update dx_ (backward). No sublayer overwrites the stream it read, so the norm
// and core caches point at it instead of copying it (Backbone's NormCache), and the input of a
// block is kept for train.recompute = blocks without a copy.
//
// A sublayer may leave its residual add x' = y + x pending (pending_ = y's buffer): the norm that
// reads x' next then does the add in the same pass (stream_norm, ops.hpp add_rmsnorm_forward),
// the next sublayer's or the final one, and writes x' into y's buffer. Every other reader of the
// stream settles the add first (a plain add): an observed depth state, a saved block input.
// Sandwich-LN's add also leaves its branch norm pending (pending_branch_): x' = N(y) + x, with
// pending_ the buffer for x' (ops.hpp norm_add_rmsnorm_forward).
template <class T>
class SingleStream : public LayerMixing<T> {
 public:
  void begin_forward(Backbone<T>& net, const T* x0) override {
    x0_.assign(x0, net.rows() * net.d());
    x_ = x0_.data();
    pending_ = nullptr;
    pending_branch_ = {};
    block_input_.assign(net.n_layer(), nullptr);
  }
  // Only the observers read z_l: without one a pending add stays pending, and data is null.
  DepthState<T> depth_state(Backbone<T>& net, int /*l*/) override {
    if (net.observer && net.observer->depth_state) settle(net);
    return {pending_ ? nullptr : x_, net.d()};
  }
  void readout_forward(Backbone<T>& net, T* features) override {
    stream_norm(net, net.layout().id("final_norm"), features, final_norm_);
  }
  void readout_backward(Backbone<T>& net, const T* dfeatures) override {
    dx_.resize(net.rows() * net.d());
    net.rmsnorm_backward(net.layout().id("final_norm"), dfeatures, dx_.data(), final_norm_,
                         net.rows(), net.d());
  }
  void end_backward(Backbone<T>& net, T* dx0) override {
    net.ops().copy(dx0, dx_.data(), net.rows() * net.d());
  }
  // The block's input is the output buffer of an earlier sublayer (or x0_), kept by its owner.
  void save_block_input(Backbone<T>& net, int p) override {
    settle(net);
    block_input_[p] = x_;
  }
  void restore_block_input(Backbone<T>&, int p) override {
    x_ = block_input_[p];
    pending_ = nullptr;
    pending_branch_ = {};
  }

 protected:
  // y = RMSNorm(x)·gain of the stream x, the pending add first in the same op.
  void stream_norm(Backbone<T>& net, int gain, T* y, NormCache<T>& cache) {
    if (pending_ && net.fused_kernels()) {
      // x' = 1·x + y: the same bits as y + x.
      if (pending_branch_.y)
        net.norm_add_rmsnorm_forward(pending_branch_.gain, *pending_branch_.cache, gain, pending_,
                                     x_, pending_branch_.y, y, cache, net.rows(), net.d());
      else
        net.add_rmsnorm_forward(gain, pending_, x_, pending_, 1.0, y, cache, net.rows(), net.d());
      x_ = pending_;
      pending_ = nullptr;
      pending_branch_ = {};
    } else {
      settle(net);
      net.rmsnorm_forward(gain, x_, y, cache, net.rows(), net.d());
    }
  }
  // Does the pending add on its own: x_ is then the stream.
  void settle(Backbone<T>& net) {
    if (!pending_) return;
    settle_branch_norm(net);
    add_into(net.ops(), pending_, x_, net.rows() * net.d());
    x_ = pending_;
    pending_ = nullptr;
  }

  // Runs a pending branch norm on its own, into pending_, leaving the add pending.
  void settle_branch_norm(Backbone<T>& net) {
    if (!pending_branch_.y) return;
    net.rmsnorm_forward(pending_branch_.gain, pending_branch_.y, pending_, *pending_branch_.cache,
                        net.rows(), net.d());
    pending_branch_ = {};
  }

  // The stream [rows, d] the next sublayer reads: x0_ or an earlier sublayer's output buffer,
  // unchanged until the backward; plus pending_ when that is not null. dx_: ∂loss/∂x of the
  // sublayer being differentiated.
  const T* x_ = nullptr;
  T* pending_ = nullptr;
  // The branch norm due before the pending add: y's buffer, its gain and statistics (y null:
  // none).
  struct PendingBranchNorm {
    const T* y = nullptr;
    int gain = -1;
    NormCache<T>* cache = nullptr;
  };
  PendingBranchNorm pending_branch_;
  Buffer<T> dx_;

 private:
  Buffer<T> x0_;
  NormCache<T> final_norm_;
  std::vector<const T*> block_input_;  // by position, under train.recompute = blocks
};

template <class T>
class PreNormStream : public SingleStream<T> {
 public:
  // block_scale[b] multiplies the norm outputs of parameter block b (empty: all 1).
  explicit PreNormStream(const ModelConfig& c, std::vector<double> block_scale = {})
      : subs_(2 * c.n_layer), block_scale_(std::move(block_scale)) {}

  SublayerIO<T> sublayer_forward(Backbone<T>& net, int p, bool ffn) override {
    const int64_t count = net.rows() * net.d();
    Sublayer& c = subs_[2 * p + ffn];
    c.u.resize(count);
    c.y.resize(count);
    stream_norm(net, net.block_param(p, ffn ? "ffn_norm" : "attn_norm"), c.u.data(), c.norm);
    scale_into(net.ops(), c.u.data(), scale(net, p), count);
    if (ffn)
      net.ffn_forward(p, c.u.data(), c.y.data());
    else
      net.attention_forward(p, c.u.data(), c.y.data());
    return {c.u.data(), c.y.data()};
  }

  // x' = y + x, to go in y's buffer (the core's backward does not read its output), is left
  // pending for the norm that reads x' next (SingleStream::stream_norm). x stays as the norm's
  // cache saw it.
  void sublayer_merge(Backbone<T>& net, int p, bool ffn) override {
    settle(net);  // nothing is pending here in the layer loop's order
    pending_ = subs_[2 * p + ffn].y.data();
  }

  // dx_ holds ∂/∂x' on entry and ∂/∂x on return.
  void sublayer_backward(Backbone<T>& net, int p, bool ffn) override {
    const int64_t count = net.rows() * net.d();
    Sublayer& c = subs_[2 * p + ffn];
    du_.resize(count);
    if (ffn)
      net.ffn_backward(p, dx_.data(), du_.data());
    else
      net.attention_backward(p, dx_.data(), du_.data());
    scale_into(net.ops(), du_.data(), scale(net, p), count);
    const int gain = net.block_param(p, ffn ? "ffn_norm" : "attn_norm");
    net.rmsnorm_backward(gain, du_.data(), dx_.data(), c.norm, net.rows(), net.d(),
                         /*accumulate_dx=*/true);
  }

  // The block's output, the state kept, is one buffer once its pending add is done (under
  // train.recompute = blocks the add at the block's end is therefore not fused).
  void release_block(Backbone<T>& net, int p) override {
    settle(net);
    for (Sublayer* c : {&subs_[2 * p], &subs_[2 * p + 1]}) {
      c->norm.release();
      c->u = {};
      release_unless(c->y, x_);
    }
  }

 private:
  using SingleStream<T>::x_;
  using SingleStream<T>::pending_;
  using SingleStream<T>::dx_;
  using SingleStream<T>::settle;
  using SingleStream<T>::stream_norm;

  double scale(const Backbone<T>& net, int p) const {
    return block_scale_.empty() ? 1.0 : block_scale_[net.param_block(p)];
  }

  struct Sublayer {
    NormCache<T> norm;  // its x is the stream the sublayer read
    Buffer<T> u, y;     // the core's input; its output, then the stream after the sublayer
  };
  std::vector<Sublayer> subs_;
  std::vector<double> block_scale_;  // by parameter block
  Buffer<T> du_;
};

}  // namespace db
