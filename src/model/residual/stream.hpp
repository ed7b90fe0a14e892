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
// block is kept for train.recompute = blocks without a copy. x_ is always the stream.
//
// The residual add and the norm that reads its sum next are one call at the point of the add
// (add_to_stream; ops.hpp add_rmsnorm_forward, as llm.c's fused_residual_forward): the merge of
// sublayer (p, ffn) computes x' = x + branch and the input norm of the next sublayer that runs
// (the design's input_norm), or the final norm after the last block, in one pass, and the next
// sublayer takes that norm's output (normed_input) instead of computing it. Where the next
// reader has no norm, or under train.recompute = blocks at a block's end (the block keeps its
// output, and its re-run must not write the next block's buffers) or train.fused_kernels = off,
// the add runs on its own and the next norm later: the same bits either way.
template <class T>
class SingleStream : public LayerMixing<T> {
 public:
  void begin_forward(Backbone<T>& net, const T* x0) override {
    x0_.assign(x0, net.rows() * net.d());
    x_ = x0_.data();
    normed_ahead_ = kNone;
    block_input_.assign(net.n_layer(), nullptr);
  }
  void set_readout_output(T* features) override { features_ = features; }
  DepthState<T> depth_state(Backbone<T>& net, int /*l*/) override { return {x_, net.d()}; }
  void readout_forward(Backbone<T>& net, T* features) override {
    if (normed_ahead_ == kFinal)  // the last add already normed the stream into features
      normed_ahead_ = kNone;
    else
      net.rmsnorm_forward(net.layout().id("final_norm"), x_, features, final_norm_, net.rows(),
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
  // The block's input is the output buffer of an earlier sublayer (or x0_), kept by its owner.
  void save_block_input(Backbone<T>&, int p) override { block_input_[p] = x_; }
  void restore_block_input(Backbone<T>&, int p) override {
    x_ = block_input_[p];
    normed_ahead_ = kNone;
  }

 protected:
  // The input norm of sublayer (p, ffn), the stream's next reader: its gain, the buffer its
  // output goes to (sized rows·d by the design) and its statistics. gain < 0: the sublayer
  // reads the stream without a norm (the default).
  struct InputNorm {
    int gain = -1;
    T* y = nullptr;
    NormCache<T>* cache = nullptr;
  };
  virtual InputNorm input_norm(Backbone<T>& /*net*/, int /*p*/, bool /*ffn*/) { return {}; }

  // A norm of the branch before the add, x' = x + N(branch) (Sandwich-LN): its gain, output
  // buffer (which then receives x') and statistics; gain < 0: none.
  struct BranchNorm {
    int gain = -1;
    T* y = nullptr;
    NormCache<T>* cache = nullptr;
  };

  // x' = x + branch into the branch's buffer (branch + x: the same bits as x + branch), or with a
  // branch norm x' = x + N(branch) into the norm's output buffer, and the norm that reads x'
  // next, in one call where both are known; then x_ = x'.
  void add_to_stream(Backbone<T>& net, int p, bool ffn, T* branch,
                     const BranchNorm& branch_norm = {}) {
    const int64_t rows = net.rows();
    const int d = net.d();
    T* sum = branch_norm.gain >= 0 ? branch_norm.y : branch;
    int next = kNone;
    InputNorm target;
    if (net.fused_kernels()) {
      next = next_reader(net, p, ffn);
      if (next == kFinal)
        target = {net.layout().id("final_norm"), features_, &final_norm_};
      else if (next != kNone)
        target = input_norm(net, next / 2, next % 2);
      if (target.gain < 0 || !target.y) next = kNone;
    }
    if (next == kNone) {  // the add on its own: the next reader norms x' itself
      if (branch_norm.gain >= 0)
        net.rmsnorm_forward(branch_norm.gain, branch, sum, *branch_norm.cache, rows, d);
      add_into(net.ops(), sum, x_, rows * d);
    } else if (branch_norm.gain >= 0) {  // 1·x + N(y): the bits of the two steps
      net.norm_add_rmsnorm_forward(branch_norm.gain, *branch_norm.cache, target.gain, sum, x_,
                                   branch, target.y, *target.cache, rows, d);
    } else {
      net.add_rmsnorm_forward(target.gain, sum, x_, branch, 1.0, target.y, *target.cache, rows, d);
    }
    x_ = sum;
    normed_ahead_ = next;
  }

  // The normed stream for sublayer (p, ffn) through its input norm: the output the add before
  // it wrote, or the norm run now.
  void normed_input(Backbone<T>& net, int p, bool ffn, const InputNorm& norm) {
    if (normed_ahead_ == 2 * p + ffn) {
      normed_ahead_ = kNone;
      return;
    }
    net.rmsnorm_forward(norm.gain, x_, norm.y, *norm.cache, net.rows(), net.d());
  }

  // The stream [rows, d] the next sublayer reads: x0_ or an earlier sublayer's output buffer,
  // unchanged until the backward. dx_: ∂loss/∂x of the sublayer being differentiated.
  const T* x_ = nullptr;
  Buffer<T> dx_;

 private:
  static constexpr int kNone = -1, kFinal = -2;

  // Who reads the stream after sublayer (p, ffn)'s add: the next running sublayer 2q + ffn, the
  // final norm (kFinal), or kNone at a block's end under train.recompute = blocks.
  int next_reader(const Backbone<T>& net, int p, bool ffn) const {
    if (!ffn) return 2 * p + 1;
    if (net.recompute_blocks()) return kNone;
    int q = p + 1;
    while (q < net.n_layer() && net.skipped(q)) ++q;
    return q == net.n_layer() ? (features_ ? kFinal : kNone) : 2 * q;
  }
  Buffer<T> x0_;
  NormCache<T> final_norm_;
  T* features_ = nullptr;              // where the readout writes, for a final norm run early
  int normed_ahead_ = kNone;           // the sublayer whose input norm an add has run, or kFinal
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
    c.y.resize(count);
    normed_input(net, p, ffn, input_norm(net, p, ffn));
    scale_into(net.ops(), c.u.data(), scale(net, p), count);
    if (ffn)
      net.ffn_forward(p, c.u.data(), c.y.data());
    else
      net.attention_forward(p, c.u.data(), c.y.data());
    return {c.u.data(), c.y.data()};
  }

  // x' = y + x into y's buffer (the core's backward does not read its output), with the next
  // norm in the same call (SingleStream::add_to_stream). x stays as the norm's cache saw it.
  void sublayer_merge(Backbone<T>& net, int p, bool ffn) override {
    add_to_stream(net, p, ffn, subs_[2 * p + ffn].y.data());
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

  // The block's output, the state kept, is the last sublayer's buffer.
  void release_block(Backbone<T>&, int p) override {
    for (Sublayer* c : {&subs_[2 * p], &subs_[2 * p + 1]}) {
      c->norm.release();
      c->u = {};
      release_unless(c->y, x_);
    }
  }

 protected:
  using typename SingleStream<T>::InputNorm;
  InputNorm input_norm(Backbone<T>& net, int p, bool ffn) override {
    Sublayer& c = subs_[2 * p + ffn];
    c.u.resize(net.rows() * net.d());
    return {net.block_param(p, ffn ? "ffn_norm" : "attn_norm"), c.u.data(), &c.norm};
  }

 private:
  using SingleStream<T>::x_;
  using SingleStream<T>::dx_;
  using SingleStream<T>::add_to_stream;
  using SingleStream<T>::normed_input;

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
