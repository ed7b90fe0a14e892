// The layer loop of every residual design, written once (doc/designs.md "The layer loop"): the
// walk over block positions p = 0..L−1 forward and back, the block schedule's skip (a skipped
// block runs neither sublayer; swaps reach a design through net.param_block / block_param), the
// diagnostics' observation points (depth states z_0..z_L, every sublayer's core input and raw
// output) and the readout into the LM head's features. A design supplies what differs, as a
// LayerMixing: the state it carries between blocks (one stream of width d, n streams of n·d,
// AttnRes's depth sources), how a sublayer reads and writes it, and its readout.
#pragma once
#include "core/error.hpp"
#include "model/backbone.hpp"

namespace db {

// Depth state z_l as the observers and LogitLens see it: [rows, width].
template <class T>
struct DepthState {
  const T* data;
  int width;
};

// What the observers see of a sublayer: its core's input (after any norm the design applies
// before the core) and the core's raw output, both [rows, d].
template <class T>
struct SublayerIO {
  const T* input;
  const T* output;
};

template <class T>
class LayerMixing {
 public:
  virtual ~LayerMixing() = default;

  // --- forward, in run_layers_forward's order ---------------------------------------------
  // Builds the state from the embedding x0 [rows, d].
  virtual void begin_forward(Backbone<T>& net, const T* x0) = 0;
  // Where readout_forward will write the features, told before the blocks run, so that the
  // last residual add can run the final norm in the same call (SingleStream). Default: unused.
  virtual void set_readout_output(T* /*features*/) {}
  // z_l, the state block l reads (l = L: the readout's input); called once per l, in order.
  // A design whose blocks read a mix of earlier outputs (AttnRes) computes the mix here.
  virtual DepthState<T> depth_state(Backbone<T>& net, int l) = 0;
  // Sublayer (p, ffn) up to its core: reads the state, runs the core, shows what it ran on.
  virtual SublayerIO<T> sublayer_forward(Backbone<T>& net, int p, bool ffn) = 0;
  // Then writes the core's output into the state (after the observer saw it).
  virtual void sublayer_merge(Backbone<T>& net, int p, bool ffn) = 0;
  // Block p is skipped. Default: the state passes unchanged.
  virtual void skip_forward(Backbone<T>& /*net*/, int /*p*/) {}
  // features [rows, d] from z_L: the final norm and whatever precedes it.
  virtual void readout_forward(Backbone<T>& net, T* features) = 0;

  // --- backward, the reverse order --------------------------------------------------------
  virtual void readout_backward(Backbone<T>& net, const T* dfeatures) = 0;
  // Backward of depth_state(l). Default: nothing, the state was only passed on.
  virtual void depth_state_backward(Backbone<T>& /*net*/, int /*l*/) {}
  virtual void sublayer_backward(Backbone<T>& net, int p, bool ffn) = 0;
  // dx0 [rows, d] (overwritten) from the gradient of the state built by begin_forward.
  virtual void end_backward(Backbone<T>& net, T* dx0) = 0;

  // --- recomputation (train.recompute = blocks; doc/designs.md "Recomputation") -----------
  // Before block p's forward: keep what its sublayers read (the state, for AttnRes the running
  // partial sum), so that restore_block_input can set the state back before the re-run.
  virtual void save_block_input(Backbone<T>& /*net*/, int /*p*/) {
    throw Error("this design's state does not support train.recompute = blocks");
  }
  virtual void restore_block_input(Backbone<T>& /*net*/, int /*p*/) {}
  // After block p's forward (and after its backward): free its activation caches, keeping its
  // output, which is the state the next block reads.
  virtual void release_block(Backbone<T>& /*net*/, int /*p*/) {}
};

// Block p's two sublayers into the state, without observers: the forward of the layer loop and
// the re-run of train.recompute = blocks.
template <class T>
void run_block_forward(Backbone<T>& net, LayerMixing<T>& mixing, int p, bool observe) {
  for (bool ffn : {false, true}) {
    const SublayerIO<T> io = mixing.sublayer_forward(net, p, ffn);
    if (observe) net.observe_sublayer(2 * p + ffn, io.input, io.output);
    mixing.sublayer_merge(net, p, ffn);
  }
}

// Frees block p's activations under train.recompute = blocks: the design's and the backbone's.
template <class T>
void release_block(Backbone<T>& net, LayerMixing<T>& mixing, int p) {
  mixing.release_block(net, p);
  net.release_caches(p);
}

// x0 → features: z_0, block 0, z_1, ..., block L−1, z_L, readout; every z_l and sublayer is
// handed to the backbone's observers. Under train.recompute = blocks a block keeps only its input.
template <class T>
void run_layers_forward(Backbone<T>& net, LayerMixing<T>& mixing, const T* x0, T* features) {
  const bool recompute = net.recompute_blocks();
  mixing.begin_forward(net, x0);
  mixing.set_readout_output(features);
  for (int l = 0;; ++l) {
    const DepthState<T> z = mixing.depth_state(net, l);
    net.observe_depth_state(l, z.data, z.width);
    if (l == net.n_layer()) break;
    if (net.skipped(l)) {
      mixing.skip_forward(net, l);
      continue;
    }
    if (recompute) mixing.save_block_input(net, l);
    run_block_forward(net, mixing, l, /*observe=*/true);
    if (recompute) release_block(net, mixing, l);
  }
  mixing.readout_forward(net, features);
}

// dfeatures → dx0 (overwritten), parameter gradients added: the forward's steps in reverse.
// Under train.recompute = blocks each block's forward is re-run from its saved input just before
// its backward (the same bits: the same operations on the same values), then freed again.
template <class T>
void run_layers_backward(Backbone<T>& net, LayerMixing<T>& mixing, const T* dfeatures, T* dx0) {
  const bool recompute = net.recompute_blocks();
  mixing.readout_backward(net, dfeatures);
  mixing.depth_state_backward(net, net.n_layer());
  net.gradients_final(net.n_layer());
  for (int p = net.n_layer() - 1; p >= 0; --p) {
    if (!net.skipped(p)) {
      if (recompute) {
        mixing.restore_block_input(net, p);
        run_block_forward(net, mixing, p, /*observe=*/false);
      }
      mixing.sublayer_backward(net, p, /*ffn=*/true);
      mixing.sublayer_backward(net, p, /*ffn=*/false);
      if (recompute) release_block(net, mixing, p);
    }
    mixing.depth_state_backward(net, p);
    net.gradients_final(p);
  }
  mixing.end_backward(net, dx0);
}

}  // namespace db
