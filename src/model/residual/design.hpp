// The one interface every residual design implements (doc/architectures.md §1–§10).
// A design owns everything between the embedding output x0 and the LM head input: its norms,
// its residual/stream/depth mixing and the readout including the final norm. Adding a design
// means one new file in this folder (doc/designs.md, "Adding a design").
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/backbone.hpp"
#include "model/model_config.hpp"
#include "model/parameters.hpp"
#include "model/residual/design_option.hpp"

namespace db {

template <class T>
class ResidualDesign {
 public:
  virtual ~ResidualDesign() = default;

  // x0, features: [rows, d]. Caches whatever the backward needs. The ten designs run the one
  // layer loop (layer_loop.hpp: blocks, skip, observers, readout) on their LayerMixing.
  virtual void forward(Backbone<T>& net, const T* x0, T* features) = 0;
  // dfeatures: [rows, d] → dx0 (overwritten); parameter gradients are added.
  virtual void backward(Backbone<T>& net, const T* dfeatures, T* dx0) = 0;

  // Residual path weights of the last forward, averaged over tokens (diagnostics.md §4):
  // a matrix [sources × consumers], sources = embedding then sublayer outputs 0..2L−1,
  // consumers = sublayer inputs 0..2L−1 then the readout; NaN where the source is not earlier.
  // A single residual stream carries every earlier output with weight 1, the default here; it
  // throws for a design whose entry lists branch_gates (gates.hpp: gated_stream_path_weights).
  virtual std::vector<double> path_weights(const Backbone<T>& net) const;

  // Multi-stream designs (HC, mHC) also implement StreamMixingSource (stream_mixing.hpp):
  // their per-token stream maps, for the effective-rank diagnostic.

  // LogitLens (diagnostics.md §6): turns a depth state z_l [rows, width] (as given to the
  // observer) into LM-head input features [rows, d] the way the design's own readout would.
  // The default applies the final RMSNorm, the readout of every single-stream design; HC and
  // mHC override it with their stream readouts (stream_readout.hpp).
  virtual void readout_state(Backbone<T>& net, const T* state, int64_t rows, int width,
                             T* features);

  // Block AttnRes (diagnostics.md §4, "dead segment"): for every sublayer input 0..2L−1 of the
  // last forward, the token-mean depth-softmax weight given to the running partial sum (NaN
  // where a sublayer has none). Designs without a partial sum return {}.
  virtual std::vector<double> partial_sum_weights(const Backbone<T>&) const { return {}; }
};

// A design's registry entry: what it says about itself beyond its code, and how to build it.
// Read by the run config and suites (options and their ranges), `plan` and the memory estimate
// (state per token), the optimizer (no-decay parameters), `depthbench designs` and the
// postprocess (display name and order). Every field has a default, so a design's file fills only
// what it has, with designated initialisers, and make_design_info<D> adds the code:
//   DesignInfo foo_design() { return make_design_info<Foo>({.name = "foo", .summary = "..."}); }
// The build finds such a function in every file of this folder (src/CMakeLists.txt: a line that
// starts with `DesignInfo <name>_design()`) and registers it; nothing else lists the designs.
struct DesignInfo {
  std::string name = {};     // config value of model.arch, e.g. "attnres_block"
  std::string title = {};    // display name in tables and figures, e.g. "Block AttnRes"
  std::string summary = {};  // one line
  // The section of doc/architectures.md that specifies it (§1 Pre-LN ... §10 Block AttnRes),
  // which orders the registry and so every table and figure. 0: a design the paper does not
  // have, listed after those by name.
  int section = 0;
  std::vector<DesignOption> options = {};
  // Parameters without weight decay, by the last component of their name (e.g. "static_alpha"
  // for blocks.3.attn_hc.static_alpha); each must name at least one declared parameter.
  std::vector<std::string> no_decay = {};
  // Learned gates that scale a branch (ReZero's α, LayerScale's per-channel gains), by the last
  // component of their name, as no_decay. A design that lists any writes its own path_weights
  // (the default, weight 1 on every path, refuses it) and gets them moved off their init by the
  // tests that need every gradient nonzero (tests/support/design_variants.hpp): a gate that
  // starts at 0 makes the gradient of whatever it gates 0.
  std::vector<std::string> branch_gates = {};
  // Values the design keeps per token and block beyond the backbone's saved tensors (its
  // streams, sources, depth pools and their gradients), for the memory estimate of `plan` and
  // of a run's start. Null: none.
  double (*state_values_per_token_block)(const ModelConfig& config) = nullptr;
  // Values a block keeps per token under train.recompute = blocks, when its activations are
  // freed: its input state and what the design keeps whatever the recompute (AttnRes's sources
  // and their gradients, MoDA's depth pools). Null: d, the single stream's input.
  double (*recompute_values_per_token_block)(const ModelConfig& config) = nullptr;
  // How many of the values above (in both counts) the design stores in the cores' activation
  // type, 2 bytes each under bf16 storage (MoDA's depth pools); the rest are fp32. Null: none.
  double (*stored_values_per_token_block)(const ModelConfig& config) = nullptr;
  // Of the values above (those of recompute_values_per_token_block where recompute), how many
  // train.state_dtype = bf16 stores in bf16, 2 bytes each (AttnRes's sources). Null: none.
  double (*bf16_state_values_per_token_block)(const ModelConfig& config, bool recompute) = nullptr;
  // Whether the design keeps a state of its own that train.state_dtype = bf16 keeps in bf16
  // (HC/mHC's streams, rounded: state_rounding.hpp; AttnRes's sources, stored:
  // state_values.hpp); a model refuses bf16 for the others.
  bool rounds_state = false;
  // A warning about a run of this design at this config, printed by `plan` and `sweep` (Block
  // AttnRes: one sublayer per block is Full AttnRes under another name). Null or "": none.
  std::string (*run_note)(const ModelConfig& config) = nullptr;

  // The code, filled by make_design_info<D> from the class template D.
  // Declares the design's extra parameters and adjusts backbone inits (e.g. DeepNorm's β).
  void (*declare)(ParameterLayout& layout, const ModelConfig& config) = nullptr;
  std::unique_ptr<ResidualDesign<float>> (*make_float)(const ModelConfig& config) = nullptr;
  std::unique_ptr<ResidualDesign<double>> (*make_double)(const ModelConfig& config) = nullptr;
  // FLOPs per token a training step adds beyond 6N + 12·L·d·T (e.g. MoDA's depth attention).
  double (*extra_flops_per_token)(const ModelConfig& config, int seq_len) = nullptr;

  double state_values_per_token(const ModelConfig& config) const {
    return state_values_per_token_block ? state_values_per_token_block(config) : 0.0;
  }
  double recompute_values_per_token(const ModelConfig& config) const {
    return recompute_values_per_token_block ? recompute_values_per_token_block(config)
                                            : double(config.d_model);
  }
  double stored_values_per_token(const ModelConfig& config) const {
    return stored_values_per_token_block ? stored_values_per_token_block(config) : 0.0;
  }
  double bf16_state_values_per_token(const ModelConfig& config, bool recompute) const {
    return bf16_state_values_per_token_block ? bf16_state_values_per_token_block(config, recompute)
                                             : 0.0;
  }
};

// Completes the entry `info` of a design class template D<T> that provides
// `static void declare(ParameterLayout&, const ModelConfig&)`, a constructor from ModelConfig
// and optionally `static double extra_flops_per_token(const ModelConfig&, int)`.
template <template <class> class D>
DesignInfo make_design_info(DesignInfo info) {
  info.declare = &D<float>::declare;
  info.make_float = [](const ModelConfig& c) -> std::unique_ptr<ResidualDesign<float>> {
    return std::make_unique<D<float>>(c);
  };
  info.make_double = [](const ModelConfig& c) -> std::unique_ptr<ResidualDesign<double>> {
    return std::make_unique<D<double>>(c);
  };
  if constexpr (requires { D<float>::extra_flops_per_token(ModelConfig{}, 0); })
    info.extra_flops_per_token = &D<float>::extra_flops_per_token;
  else
    info.extra_flops_per_token = [](const ModelConfig&, int) { return 0.0; };
  return info;
}

}  // namespace db
