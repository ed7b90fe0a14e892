// The n-stream state of HC (§7) and mHC (§8): [rows, n, d], stream-major per token. Shared here:
// how the embedding enters it, how its gradient leaves it, and the readouts into the LM head
// (also used by LogitLens through ResidualDesign::readout_state), as the state both designs
// hand the layer loop (MultiStream).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "model/backbone.hpp"
#include "model/residual/layer_loop.hpp"
#include "model/residual/normed_product.hpp"
#include "model/residual/stream_kernels.hpp"

namespace db {

// HC norm_then_sum (authors' code): Σ_s N_final(H[s]); HC sum_then_norm (HC paper):
// N_final(Σ_s H[s]); mHC: N_final(mean_s X[s]).
enum class StreamReadout { norm_then_sum, sum_then_norm, mean_then_norm };

// `reduced` keeps the reduced streams the norm reads (the cache points at it and at `state`).
template <class T>
void stream_readout_forward(Backbone<T>& net, StreamReadout mode, const T* state, int64_t rows,
                            int n, T* features, NormCache<T>& cache, Buffer<T>& reduced) {
  const int d = net.d(), gain = net.layout().id("final_norm");
  if (mode == StreamReadout::norm_then_sum) {
    Buffer<T> normed(size_t(rows) * n * d);
    net.rmsnorm_forward(gain, state, normed.data(), cache, rows * n, d);
    sum_streams(net.ops().space(), features, normed.data(), T(1), rows, n, d);
    return;
  }
  reduced.resize(size_t(rows) * d);
  sum_streams(net.ops().space(), reduced.data(), state,
              T(mode == StreamReadout::mean_then_norm ? 1.0 / n : 1.0), rows, n, d);
  net.rmsnorm_forward(gain, reduced.data(), features, cache, rows, d);
}

// dstate overwritten.
template <class T>
void stream_readout_backward(Backbone<T>& net, StreamReadout mode, const T* dfeatures, int64_t rows,
                             int n, T* dstate, NormCache<T>& cache) {
  const int d = net.d(), gain = net.layout().id("final_norm");
  if (mode == StreamReadout::norm_then_sum) {
    Buffer<T> dnormed(size_t(rows) * n * d);
    broadcast_streams(net.ops().space(), dnormed.data(), dfeatures, rows, n, d);
    net.rmsnorm_backward(gain, dnormed.data(), dstate, cache, rows * n, d);
    return;
  }
  Buffer<T> dreduced(size_t(rows) * d);
  net.rmsnorm_backward(gain, dfeatures, dreduced.data(), cache, rows, d);
  if (mode == StreamReadout::mean_then_norm)
    net.ops().axpby(dreduced.data(), T(1.0 / n), dreduced.data(), T(0), rows * d);
  broadcast_streams(net.ops().space(), dstate, dreduced.data(), rows, n, d);
}

// A sublayer's input x[r] = Σ_s w_rs·H[r, s] (w_rs = weights[(r·n + s)·stride]) and the core's
// input u = RMSNorm(x)·gain in one pass over each row (combine_streams_rmsnorm), with `cache`
// filled as Backbone::rmsnorm_forward fills it: net.rmsnorm_backward(gain_id, …, cache, …) is
// the norm's backward. The same bits on the host as combine_streams then net.rmsnorm_forward,
// which run instead under train.fused_kernels = off.
template <class T>
void combine_streams_normed(Backbone<T>& net, int gain_id, T* x, T* u, NormCache<T>& cache,
                            const T* H, const T* weights, int stride, int n) {
  const int64_t rows = net.rows();
  if (!net.fused_kernels()) {  // train.fused_kernels = off: the two passes
    combine_streams(net.ops().space(), x, H, weights, stride, rows, n, net.d());
    net.rmsnorm_forward(gain_id, x, u, cache, rows, net.d());
    return;
  }
  cache.x = x;
  cache.rstd.resize(rows);
  combine_streams_rmsnorm(net.ops().space(), x, u, cache.rstd.data(), H, weights, stride,
                          gain_id >= 0 ? net.value(gain_id) : static_cast<const T*>(nullptr),
                          net.config().norm_eps, rows, n, net.d());
}

// Its backward, from dx = ∂/∂x: the weight gradients (overwritten) now, which the coefficients'
// backward needs; the input gradient dH[r, s] += w_rs·dx[r] too under train.fused_kernels = off,
// else returned as the term that normed_product_backward adds in its pass over dH.
template <class T>
normed_product_kernels::CombineInputTerm<T> combine_streams_normed_backward(Backbone<T>& net,
                                                                            T* dweights, T* dH,
                                                                            const T* dx, const T* H,
                                                                            const T* weights,
                                                                            int stride, int n) {
  const bool fused = net.fused_kernels();
  combine_streams_backward(net.ops().space(), dweights, dH, dx, H, weights, stride, net.rows(), n,
                           net.d(), /*input_grads=*/!fused);
  if (!fused) return {};
  return {dx, weights, stride, n, net.d()};
}

// The n-stream state for the layer loop (layer_loop.hpp): H_0 = n copies of the embedding,
// depth states of width n·d, the readout `mode`, dx0 = Σ_s dH[s]. A design adds its sublayers,
// which take the state they read with take_input (kept, not copied, until the backward), write
// the new one into state_ and mark ran_ (forward), and update dstate_ (backward).
template <class T>
class MultiStream : public LayerMixing<T> {
 public:
  MultiStream(const ModelConfig& c, int n, StreamReadout mode)
      : n_(n), inputs_(2 * c.n_layer), mode_(mode), sublayers_(2 * c.n_layer) {}

  void begin_forward(Backbone<T>& net, const T* x0) override {
    rows_ = net.rows();
    state_.resize(rows_ * n_ * net.d());
    broadcast_streams(net.ops().space(), state_.data(), x0, rows_, n_, net.d());
    ran_.assign(sublayers_, false);
  }
  DepthState<T> depth_state(Backbone<T>& net, int /*l*/) override {
    return {state_.data(), n_ * net.d()};
  }
  void readout_forward(Backbone<T>& net, T* features) override {
    stream_readout_forward(net, mode_, state_.data(), rows_, n_, features, final_norm_, reduced_);
  }
  void readout_backward(Backbone<T>& net, const T* dfeatures) override {
    dstate_.resize(net.rows() * n_ * net.d());
    stream_readout_backward(net, mode_, dfeatures, net.rows(), n_, dstate_.data(), final_norm_);
  }
  void end_backward(Backbone<T>& net, T* dx0) override {
    sum_streams(net.ops().space(), dx0, dstate_.data(), T(1), net.rows(), n_, net.d());
  }
  // train.recompute = blocks: block p's input is kept by its first sublayer (take_input); the
  // restore swaps it back into state_, from where that sublayer's re-run takes it again.
  void save_block_input(Backbone<T>&, int) override {}
  void restore_block_input(Backbone<T>&, int p) override { state_.swap(inputs_[2 * p]); }
  void release_block(Backbone<T>&, int p) override { inputs_[2 * p + 1] = {}; }

  // LogitLens: a depth state [rows, n·d] read out as the forward's readout does.
  void read_out(Backbone<T>& net, const T* state, int64_t rows, int width, T* features) const {
    DB_REQUIRE(width == n_ * net.d(), "a multi-stream depth state must hold n·d values per token");
    NormCache<T> cache;
    Buffer<T> reduced;
    stream_readout_forward(net, mode_, state, rows, n_, features, cache, reduced);
  }

 protected:
  // Sublayer k's input state H [rows, n, d], moved out of state_ (no copy); state_ is then a
  // buffer of the same size for the sublayer's output.
  const T* take_input(int k) {
    inputs_[k].swap(state_);
    state_.resize(inputs_[k].size());
    return inputs_[k].data();
  }
  const T* input(int k) const { return inputs_[k].data(); }

  const int n_;
  Buffer<T> state_, dstate_;  // [rows, n, d]; ∂loss/∂state of the sublayer being differentiated
  std::vector<bool> ran_;     // the sublayers the last forward ran (not skipped)
  int64_t rows_ = 0;          // of the last forward

 private:
  std::vector<Buffer<T>> inputs_;  // by sublayer: the state it read
  StreamReadout mode_;
  int sublayers_;
  NormCache<T> final_norm_;
  Buffer<T> reduced_;
};

}  // namespace db
