// Every registered design with its defaults, plus the design options that change which buffers
// a design keeps (its state): the cases of the model tests that must hold for every design and
// every state (recompute_test, bf16_storage_test).
//
// What the tests that loop over the registered designs demand of a design, in one place (the
// programs are listed in tests/model/tests.cmake, DEPTHBENCH_DESIGN_LOOP_TESTS; the test
// model.extra_design_in_one_file runs them all with one more design, ReZero, built in):
// - design_registry_test: a distinct title; option defaults inside their own ranges; no_decay
//   names parameters that exist. The paper's ten keep their order (section 1..10).
// - parameter_layout_test: every parameter aligned and counted once, padding zero.
// - layer_loop_test: the layer loop shows each depth state and each running sublayer once, in
//   order, with a block skipped (so a design runs through run_layers_forward/backward).
// - model_gradcheck_test: the backward matches fourth-order finite differences to 1e-6 (float64),
//   with and without train.recompute = blocks, weights moved off their init by N(0, 0.1²).
// - recompute_test, bf16_storage_test: train.recompute = blocks gives the same bits and holds
//   fewer bytes; bf16 activations stay within 3·10⁻² of fp32 yet differ, the same bits twice;
//   weights moved off their init by initialize_off_init (model_setup.hpp), which sets a design's
//   declared branch_gates (DesignInfo) to 0.5 + noise: a gate left at 0 would make everything
//   it gates carry no gradient, and "the rounding changed the gradients" would fail for them.
// - fused_residual_norm_test: train.fused_kernels = off gives the bits of the fused ops (a
//   design without fused ops passes trivially); poisoned_memory_test: the same bits when new
//   buffers start as NaN (no value read before it is written).
// - bf16_state_test: a design without rounds_state refuses train.state_dtype = bf16 in one line;
//   one with it stays within bf16 tolerance.
// - pytorch_agreement_test, pytorch_bf16_storage_test: loss, logits and every gradient agree
//   with tests/reference; a design the reference does not implement is skipped with a message
//   (support/reference_config.hpp, reference_implements).
// - registry_listing_test: `depthbench designs [--json]` lists every entry as all_designs() has it.
// - diag_known_answers_test: every design is diagnosed; the default path_weights is 1 on every
//   path, so a design with branch_gates writes its own (gates.hpp: gated_stream_path_weights).
// - export_roundtrip_test: safetensors export round-trips bit for bit, every tensor under its
//   name; the HF export refuses every design but pre_ln by name.
// - gradient_buckets_test, memory_estimate_test: the gradient buckets cover every parameter; the
//   memory estimate uses the entry's per-token state counts.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "model/model_config.hpp"
#include "model/residual/registry.hpp"

namespace db::test {

struct Variant {
  std::string arch;
  std::map<std::string, std::string> options;
  std::string name() const {
    std::string n = arch;
    for (const auto& [key, value] : options) n += " " + key + "=" + value;
    return n;
  }
  // The small model these tests build: d = 32, 4 heads sharing 2 kv heads, 37 tokens.
  ModelConfig small_config(int n_layer = 4, bool qk_norm = true) const {
    ModelConfig c;
    c.arch = arch;
    c.design_options = options;
    c.n_layer = n_layer;
    c.d_model = 32;
    c.n_head = 4;
    c.n_kv_head = 2;
    c.qk_norm = qk_norm;
    c.vocab_size = 37;
    return c;
  }
};

inline std::vector<Variant> state_changing_variants() {
  std::vector<Variant> v;
  for (const DesignInfo& d : all_designs()) v.push_back({d.name, {}});
  v.push_back({"deepnorm", {{"deepnorm_norm", "rmsnorm"}}});
  v.push_back({"moda", {{"moda_post_norm", "true"}}});
  v.push_back({"moda", {{"moda_rope_depth_keys", "true"}}});
  v.push_back({"hc", {{"hc_readout", "sum_then_norm"}}});
  v.push_back({"attnres_block", {{"attnres_blocks", "3"}}});  // partial sums across blocks
  return v;
}

}  // namespace db::test
