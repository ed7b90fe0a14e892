// The general single-stream sublayer that Sandwich-LN (§2), DeepNorm (§4), KEEL (§5) and MoDA
// (§6) compose, every part optional:
//   x' = N_out( α·x + N_branch( F( s·N_in(x) ) ) )
// Pre-LN is {N_in}, Sandwich-LN {N_in, N_branch}, DeepNorm {N_out, α}, KEEL {N_in, N_out, α}.
// F is the block's attention or FFN core (or a design's replacement, e.g. MoDA attention).
// The stack is a single stream (stream.hpp) run by the layer loop (layer_loop.hpp), which owns the
// block schedule (skip, swap), the observers and the final RMSNorm.
#pragma once
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "model/backbone.hpp"
#include "model/residual/stream.hpp"

namespace db {

// The value "auto" marks a design option whose default is derived from the shape (DeepNorm's
// α and β, KEEL's α): returns `derived` for it, else the number given.
inline double derived_option(const ModelConfig& c, const std::string& key, double derived) {
  const std::string v = c.option(key, std::string("auto"));
  return v == "auto" || v.empty() ? derived : c.option(key, 0.0);
}

struct SublayerForm {
  // Suffixes of the `blocks.{i}.` gain parameters; empty: that norm is absent.
  std::string in_norm, branch_norm, out_norm;
  bool out_layernorm = false;  // N_out is the bias-free LayerNorm instead of RMSNorm (DeepNorm)
  double alpha = 1.0;          // weight of the skip path
  double in_scale = 1.0;       // s, multiplies the N_in output after its gain
};

// The core F of sublayer (p, ffn): forward u → y, backward dy → du (du overwritten).
template <class T>
struct SublayerCore {
  virtual ~SublayerCore() = default;
  virtual void forward(Backbone<T>& net, int p, bool ffn, const T* u, T* y) {
    if (ffn)
      net.ffn_forward(p, u, y);
    else
      net.attention_forward(p, u, y);
  }
  virtual void backward(Backbone<T>& net, int p, bool ffn, const T* dy, T* du) {
    if (ffn)
      net.ffn_backward(p, dy, du);
    else
      net.attention_backward(p, dy, du);
  }
};

// The stack of these sublayers on a single stream (stream.hpp), for the layer loop.
template <class T>
class SublayerStack : public SingleStream<T> {
 public:
  // The form of the sublayer at position p; may depend on net.param_block(p) (KEEL's block 0).
  using FormOf = std::function<SublayerForm(const Backbone<T>& net, int p, bool ffn)>;

  // core: F of every sublayer (null: the block's own attention and FFN).
  SublayerStack(const ModelConfig& c, FormOf form, SublayerCore<T>* core = nullptr)
      : form_(std::move(form)), core_(core ? *core : plain_core_), caches_(2 * c.n_layer) {}

  SublayerIO<T> sublayer_forward(Backbone<T>& net, int p, bool ffn) override {
    const SublayerForm f = form_(net, p, ffn);
    Cache& c = caches_[2 * p + ffn];
    const int64_t count = net.rows() * net.d();
    const T* u = x_;
    if (!f.in_norm.empty()) {  // run by the add before it when that could (add_to_stream)
      normed_input(net, p, ffn, input_norm(net, p, ffn));
      scale_into(net.ops(), c.u.data(), f.in_scale, count);
      u = c.u.data();
    }
    Buffer<T>& y = output(f, c);
    y.resize(count);
    core_.forward(net, p, ffn, u, y.data());
    return {u, y.data()};
  }

  // Every step writes a buffer of this sublayer's own, so x and what the caches saw stay.
  void sublayer_merge(Backbone<T>& net, int p, bool ffn) override {
    const SublayerForm f = form_(net, p, ffn);
    Cache& c = caches_[2 * p + ffn];
    const int64_t rows = net.rows(), count = rows * net.d();
    T* branch = output(f, c).data();
    // x' = x + branch (or x + N_branch(y): Sandwich-LN, MoDA, KEEL's block-0 attention) without
    // α or N_out: the add and the next norm in one call (SingleStream::add_to_stream), x' in
    // the branch's buffer (branch + x: the same bits as x + branch).
    if (f.alpha == 1.0 && f.out_norm.empty()) {
      if (f.branch_norm.empty()) return add_to_stream(net, p, ffn, branch);
      c.branch_y.resize(count);
      return add_to_stream(net, p, ffn, c.y.data(),
                           {net.block_param(p, f.branch_norm), c.branch_y.data(), &c.branch});
    }
    if (!f.branch_norm.empty()) {
      c.branch_y.resize(count);
      net.rmsnorm_forward(net.block_param(p, f.branch_norm), c.y.data(), c.branch_y.data(),
                          c.branch, rows, net.d());
      branch = c.branch_y.data();
    }
    // sum = α·x + branch. The backward reads neither the branch (y without a branch norm: the
    // core's backward does not read its output) nor the norm's output, so with α = 1 the sum
    // goes into the branch's buffer (branch + x: the same bits as x + branch); with α ≠ 1 into a
    // buffer of its own, rounded as the axpby of an in-place x = α·x + branch. With N_out the
    // add and the norm run as one op (DeepNorm, KEEL: ops.hpp add_rmsnorm_forward), which
    // writes the sum once and gives the bits of the two steps (two ops under
    // train.fused_kernels = off).
    T* sum = branch;
    if (f.alpha != 1.0) {
      c.sum.resize(count);
      sum = c.sum.data();
    }
    const bool out_norm = !f.out_norm.empty();
    const int gain = out_norm ? net.block_param(p, f.out_norm) : -1;
    if (out_norm) c.out_y.resize(count);
    if (out_norm && net.fused_kernels()) {
      if (f.out_layernorm)
        net.add_layernorm_forward(gain, sum, x_, branch, f.alpha, c.out_y.data(), c.out, rows,
                                  net.d());
      else
        net.add_rmsnorm_forward(gain, sum, x_, branch, f.alpha, c.out_y.data(), c.out, rows,
                                net.d());
      x_ = c.out_y.data();
      return;
    }
    if (f.alpha == 1.0) {
      add_into(net.ops(), branch, x_, count);
    } else {
      net.ops().copy(sum, x_, count);
      net.ops().axpby(sum, T(1), branch, T(f.alpha), count);
    }
    x_ = sum;
    if (!out_norm) return;
    if (f.out_layernorm)
      net.layernorm_forward(gain, sum, c.out_y.data(), c.out, rows, net.d());
    else
      net.rmsnorm_forward(gain, sum, c.out_y.data(), c.out, rows, net.d());
    x_ = c.out_y.data();
  }

  // The block's output, the state kept, is the buffer x_ points at.
  void release_block(Backbone<T>&, int p) override {
    for (Cache* c : {&caches_[2 * p], &caches_[2 * p + 1]}) {
      for (NormCache<T>* norm : {&c->in, &c->branch, &c->out}) norm->release();
      for (Buffer<T>* b : {&c->u, &c->y, &c->branch_y, &c->sum, &c->out_y}) release_unless(*b, x_);
    }
  }

  // dx_ holds ∂/∂x' on entry and ∂/∂x on return.
  void sublayer_backward(Backbone<T>& net, int p, bool ffn) override {
    const SublayerForm f = form_(net, p, ffn);
    Cache& c = caches_[2 * p + ffn];
    const int64_t rows = net.rows(), count = rows * net.d();
    du_.resize(count);
    // dz = ∂/∂(α·x + branch): N_out's backward, or without N_out ∂/∂x' itself, read where it is
    // (dx_, which becomes α·dz in place once the core's backward has read it).
    const T* dz = dx_.data();
    if (!f.out_norm.empty()) {
      dz_.resize(count);
      const int gain = net.block_param(p, f.out_norm);
      if (f.out_layernorm)
        net.layernorm_backward(gain, dx_.data(), dz_.data(), c.out, rows, net.d());
      else
        net.rmsnorm_backward(gain, dx_.data(), dz_.data(), c.out, rows, net.d());
      dz = dz_.data();
    }
    const T* dy = dz;
    if (!f.branch_norm.empty()) {
      dy_.resize(count);
      net.rmsnorm_backward(net.block_param(p, f.branch_norm), dz, dy_.data(), c.branch, rows,
                           net.d());
      dy = dy_.data();
    }
    core_.backward(net, p, ffn, dy, du_.data());
    if (f.out_norm.empty())
      scale_into(net.ops(), dx_.data(), f.alpha, count);  // dx = α·dz
    else
      net.ops().axpby(dx_.data(), T(f.alpha), dz_.data(), T(0), count);  // dx = α·dz
    if (!f.in_norm.empty()) {
      scale_into(net.ops(), du_.data(), f.in_scale, count);
      net.rmsnorm_backward(net.block_param(p, f.in_norm), du_.data(), dx_.data(), c.in, rows,
                           net.d(), /*accumulate_dx=*/true);
    } else {
      add_into(net.ops(), dx_.data(), du_.data(), count);
    }
  }

 private:
  using typename SingleStream<T>::InputNorm;
  using SingleStream<T>::x_;
  using SingleStream<T>::dx_;
  using SingleStream<T>::add_to_stream;
  using SingleStream<T>::normed_input;

  // N_in of sublayer (p, ffn) into its u, for the add before it (SingleStream::add_to_stream).
  InputNorm input_norm(Backbone<T>& net, int p, bool ffn) override {
    const SublayerForm f = form_(net, p, ffn);
    if (f.in_norm.empty()) return {};
    Cache& c = caches_[2 * p + ffn];
    c.u.resize(net.rows() * net.d());
    return {net.block_param(p, f.in_norm), c.u.data(), &c.in};
  }

  // What sublayer k keeps: its norms' statistics and the tensors it wrote (each absent part of
  // its form stays empty): N_in's output u, the core's output y, N_branch(y), the sum α·x + ...
  // when α ≠ 1, N_out's output. The last one written is the stream after the sublayer.
  struct Cache {
    NormCache<T> in, branch, out;
    Buffer<T> u, y, branch_y, sum, out_y;
  };

  // The core's output: the sublayer's own y, except when the merge neither reads it later (no
  // branch norm) nor adds into it (α ≠ 1): then the shared y_, dead after the merge (DeepNorm).
  Buffer<T>& output(const SublayerForm& f, Cache& c) {
    return f.branch_norm.empty() && f.alpha != 1.0 ? y_ : c.y;
  }

  FormOf form_;
  SublayerCore<T> plain_core_;
  SublayerCore<T>& core_;
  std::vector<Cache> caches_;
  Buffer<T> y_, dz_, dy_, du_;
};

}  // namespace db
