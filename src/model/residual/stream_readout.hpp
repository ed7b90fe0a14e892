// The n-stream state of HC (§7) and mHC (§8): [rows, n, d], stream-major per token. Shared here:
// how the embedding enters it, how its gradient leaves it, and the readouts into the LM head
// (also used by LogitLens through ResidualDesign::readout_state), as the state both designs
// hand the layer loop (MultiStream).
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "model/backbone.hpp"
#include "model/residual/layer_loop.hpp"
#include "model/residual/normed_product.hpp"
#include "model/residual/state_rounding.hpp"
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

// A state [rows, n, d] and the rstd of its stream-norm rows (the next sublayer's
// normed_product_forward reads it), which travel together: rstd_valid says that rstd holds the
// rstd of exactly these values (computed by the mix that wrote them, or by the norm's own pass).
// Whatever writes the values without it sets rstd_valid false.
template <class T>
struct StreamState {
  Buffer<T> values, rstd;
  bool rstd_valid = false;
  void swap(StreamState& other) {
    values.swap(other.values);
    rstd.swap(other.rstd);
    std::swap(rstd_valid, other.rstd_valid);
  }
};

// What a sublayer reads: its input state H [rows, n, d] and the rstd of H's stream-norm rows.
template <class T>
struct StreamInput {
  const T* H;
  const T* rstd;
};

// The n-stream state for the layer loop (layer_loop.hpp): H_0 = n copies of the embedding,
// depth states of width n·d, the readout `mode`, dx0 = Σ_s dH[s]. A design adds its sublayers,
// which take the state they read and its stream norm's rstd with take_input (kept, not copied,
// until the backward), write the new one with mix_into_state and mark ran_ (forward), and update
// dstate_ (backward).
//
// The stream norm (normed_product.hpp) has rows of norm_streams·d values: HC 1 stream (a row per
// (token, stream)), mHC n (a row per token). Under train.fused_kernels the mix computes the rstd
// of the state it writes (stream_kernels.hpp MixRstd), and the next sublayer uses it instead of a
// pass of its own over the state, when it belongs to that state: not for H_0, which the first
// sublayer's pass reads, and skipped blocks pass state and rstd on together, as the recompute's
// restore does. Under train.state_dtype = bf16 the state and its gradient are rounded where they
// pass between sublayers (state_rounding.hpp).
template <class T>
class MultiStream : public LayerMixing<T> {
 public:
  MultiStream(const ModelConfig& c, int n, int norm_streams, StreamReadout mode)
      : n_(n),
        norm_streams_(norm_streams),
        inputs_(2 * c.n_layer),
        mode_(mode),
        sublayers_(2 * c.n_layer) {}

  void begin_forward(Backbone<T>& net, const T* x0) override {
    rows_ = net.rows();
    state_.values.resize(rows_ * n_ * net.d());
    broadcast_streams(net.ops().space(), state_.values.data(), x0, rows_, n_, net.d());
    round_state(net, state_.values.data(), int64_t(state_.values.size()));
    state_.rstd_valid = false;
    ran_.assign(sublayers_, false);
  }
  DepthState<T> depth_state(Backbone<T>& net, int /*l*/) override {
    return {state_.values.data(), n_ * net.d()};
  }
  void readout_forward(Backbone<T>& net, T* features) override {
    stream_readout_forward(net, mode_, state_.values.data(), rows_, n_, features, final_norm_,
                           reduced_);
  }
  void readout_backward(Backbone<T>& net, const T* dfeatures) override {
    dstate_.resize(net.rows() * n_ * net.d());
    stream_readout_backward(net, mode_, dfeatures, net.rows(), n_, dstate_.data(), final_norm_);
    round_state(net, dstate_.data(), int64_t(dstate_.size()));
  }
  void end_backward(Backbone<T>& net, T* dx0) override {
    sum_streams(net.ops().space(), dx0, dstate_.data(), T(1), net.rows(), n_, net.d());
  }
  // train.recompute = blocks: block p's input is kept by its first sublayer (take_input), with
  // its rstd; the restore swaps both back into state_, from where that sublayer's re-run takes
  // them again.
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
  // Sublayer k's input state H, moved out of state_ (no copy), with the rstd of its stream-norm
  // rows: the one handed over with it under train.fused_kernels, else from the norm's own pass
  // over H (always under train.fused_kernels = off). state_ is then a buffer of the same size for
  // the sublayer's output.
  StreamInput<T> take_input(Backbone<T>& net, int k) {
    StreamState<T>& in = inputs_[k];
    in.swap(state_);
    state_.values.resize(in.values.size());
    state_.rstd_valid = false;
    if (!(in.rstd_valid && net.fused_kernels())) {
      in.rstd.resize(norm_rows());
      row_rstds(net.ops().space(), in.rstd.data(), in.values.data(), norm_rows(), norm_width(net),
                net.config().norm_eps);
      in.rstd_valid = true;
    }
    return input(k);
  }
  StreamInput<T> input(int k) const { return {inputs_[k].values.data(), inputs_[k].rstd.data()}; }

  // state_[r, i] = post[r·n + i]·y[r] + Σ_j M(r, i, j)·H[r, j] from sublayer k's input H; under
  // train.fused_kernels with the rstd of its stream-norm rows in the same pass. Under
  // train.state_dtype = bf16 the state is rounded after, and its rstd is then the next norm's
  // own, from the rounded values.
  void mix_into_state(Backbone<T>& net, int k, const T* y, const T* post, const T* mix,
                      StreamMapLayout map) {
    const MemorySpace space = net.ops().space();
    const T* H = inputs_[k].values.data();
    if (!net.fused_kernels() || net.bf16_state()) {
      mix_streams(space, state_.values.data(), H, y, post, mix, map, rows_, n_, net.d());
      round_state(net, state_.values.data(), int64_t(state_.values.size()));
      state_.rstd_valid = false;
      return;
    }
    state_.rstd.resize(norm_rows());
    mix_streams_rstd(space, state_.values.data(), state_.rstd.data(), H, y, post, mix, map, rows_,
                     n_, net.d(), norm_streams_, net.config().norm_eps);
    state_.rstd_valid = true;
  }

  // Ends sublayer k's backward: dH, ∂loss/∂ of the state it read, becomes dstate_ (rounded
  // under train.state_dtype = bf16); dH keeps the old buffer as scratch.
  void pass_gradient_on(Backbone<T>& net, Buffer<T>& dH) {
    dstate_.swap(dH);
    round_state(net, dstate_.data(), int64_t(dstate_.size()));
  }

  // The stream norm's rows: how many (for the last forward's rows) and how wide.
  int64_t norm_rows() const { return rows_ * n_ / norm_streams_; }
  int norm_width(const Backbone<T>& net) const { return norm_streams_ * net.d(); }

  const int n_;
  Buffer<T> dstate_;       // ∂loss/∂state [rows, n, d] of the sublayer being differentiated
  std::vector<bool> ran_;  // the sublayers the last forward ran (not skipped)
  int64_t rows_ = 0;       // of the last forward

 private:
  const int norm_streams_;
  StreamState<T> state_;                // the state the next sublayer reads
  std::vector<StreamState<T>> inputs_;  // by sublayer: the state it read
  StreamReadout mode_;
  int sublayers_;
  NormCache<T> final_norm_;
  Buffer<T> reduced_;
};

}  // namespace db
