// An eleventh residual design defined entirely in this file, as a newcomer would add one: its
// own parameters, the gate kit's functors (model/residual/gates.hpp, launched through
// ops/launch.hpp), its path weights, and one registration line. It then trains, stops with a
// checkpoint, resumes to the uninterrupted curve bit for bit, is diagnosed and is sized by `plan`,
// through the same entry points as the ten built-in designs (train_run, run_diagnostics,
// plan_suite). The file is compiled by nvcc when the CUDA backend is built
// (tests/model/tests.cmake), so the design's functors reach the CUDA launcher too.
//
// The design, "gated_residual": Pre-LN whose branch outputs pass a learned per-channel gate,
//   h = x + g_a ⊙ Attn(N_a(x));  x' = h + g_f ⊙ FFN(N_f(h));  features = N_final(x_L),
// gates `blocks.{i}.attn_gate`, `blocks.{i}.ffn_gate` [d], init 1 (so it starts as Pre-LN).
#define BOOST_TEST_MODULE custom_design
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>

#include "core/rng.hpp"
#include "data/token_data.hpp"
#include "diag/diagnose.hpp"
#include "io/run_file.hpp"
#include "model/model.hpp"
#include "model/residual/gates.hpp"
#include "model/residual/registry.hpp"
#include "model/residual/stream.hpp"
#include "ops/launch.hpp"
#include "support/h5_tensors.hpp"
#include "sweep/sweep_plan.hpp"
#include "train/memory_estimate.hpp"
#include "train/mpi_test_main.hpp"
#include "train/trainer.hpp"

using namespace db;
namespace fs = std::filesystem;

namespace {

// A single stream (x_0 = embedding, final RMSNorm readout: stream.hpp) run by the layer loop,
// which also skips, swaps and observes; the design writes only its sublayers.
template <class T>
class GatedResidual : public ResidualDesign<T>, public SingleStream<T> {
 public:
  explicit GatedResidual(const ModelConfig& c)
      : norms_(2 * c.n_layer), u_(2 * c.n_layer), y_(2 * c.n_layer), out_(2 * c.n_layer) {}

  static void declare(ParameterLayout& layout, const ModelConfig& c) {
    declare_block_norms(layout, c, {"attn_norm", "ffn_norm"});
    for (int b = 0; b < c.n_layer; ++b)
      for (const char* gate : {"attn_gate", "ffn_gate"})
        layout.add_constant("blocks." + std::to_string(b) + "." + gate, {c.d_model}, 1.0,
                            /*weight_decay=*/false);
  }

  void forward(Backbone<T>& net, const T* x0, T* features) override {
    run_layers_forward(net, *this, x0, features);
  }
  void backward(Backbone<T>& net, const T* dfeatures, T* dx0) override {
    run_layers_backward(net, *this, dfeatures, dx0);
  }

  // u = N(x), y = F(u); then x' = x + g ⊙ y, into a buffer of the sublayer's own (the norm and
  // the core keep pointers to x and u, SingleStream's rule).
  SublayerIO<T> sublayer_forward(Backbone<T>& net, int p, bool ffn) override {
    const int64_t rows = net.rows(), d = net.d();
    const int k = 2 * p + ffn;
    u_[k].resize(rows * d);
    y_[k].resize(rows * d);
    net.rmsnorm_forward(norm(net, p, ffn), this->x_, u_[k].data(), norms_[k], rows, int(d));
    if (ffn)
      net.ffn_forward(p, u_[k].data(), y_[k].data());
    else
      net.attention_forward(p, u_[k].data(), y_[k].data());
    return {u_[k].data(), y_[k].data()};
  }
  void sublayer_merge(Backbone<T>& net, int p, bool ffn) override {
    const int k = 2 * p + ffn;
    out_[k].resize(net.rows() * net.d());
    gated_add_forward(net, gate(net, p, ffn), out_[k].data(), this->x_, y_[k].data());
    this->x_ = out_[k].data();
  }

  // dx_ holds ∂/∂x' on entry and ∂/∂x on return.
  void sublayer_backward(Backbone<T>& net, int p, bool ffn) override {
    const int64_t rows = net.rows(), d = net.d();
    const int k = 2 * p + ffn;
    T* dx = this->dx_.data();
    dy_.resize(rows * d);
    gated_add_backward(net, gate(net, p, ffn), dy_.data(), dx, y_[k].data());
    du_.resize(rows * d);
    if (ffn)
      net.ffn_backward(p, dy_.data(), du_.data());
    else
      net.attention_backward(p, dy_.data(), du_.data());
    net.rmsnorm_backward(norm(net, p, ffn), du_.data(), dx, norms_[k], rows, int(d),
                         /*accumulate_dx=*/true);
  }

  // Each sublayer's output reaches every later consumer with the mean of its gate.
  std::vector<double> path_weights(const Backbone<T>& net) const override {
    return gated_stream_path_weights(net, [&](int k) { return gate(net, k / 2, k % 2); });
  }

 private:
  static int gate(const Backbone<T>& net, int p, bool ffn) {
    return net.block_param(p, ffn ? "ffn_gate" : "attn_gate");
  }
  static int norm(Backbone<T>& net, int p, bool ffn) {
    return net.block_param(p, ffn ? "ffn_norm" : "attn_norm");
  }

  std::vector<NormCache<T>> norms_;
  std::vector<Buffer<T>> u_;    // each sublayer's core input, for its backward
  std::vector<Buffer<T>> y_;    // each sublayer's branch output, for the gate gradient
  std::vector<Buffer<T>> out_;  // the stream after each sublayer
  Buffer<T> du_, dy_;
};

// The one registration line: the entry describes the design as those of src/model/residual do
// (design.hpp: DesignInfo); it keeps no state beyond the backbone's, so `plan` needs no
// per-token state estimate for it. Outside src/model/residual/ the build does not find it, so
// it registers itself.
const DesignRegistration registered{make_design_info<GatedResidual>(
    {.name = "gated_residual",
     .title = "Gated residual",
     .summary = "Pre-LN with a learned per-channel gate on every branch (a test design)",
     .branch_gates = {"attn_gate", "ffn_gate"}})};

// A learnable token stream: a repeating pattern of phrases with some noise.
std::vector<uint32_t> patterned_tokens(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<uint32_t> ids;
  const std::vector<std::vector<uint32_t>> phrases = {{1, 2, 3, 4}, {5, 6, 7}, {8, 9, 10, 11, 12},
                                                      {2, 4, 6, 8}, {13, 14},  {15, 1, 15}};
  while (ids.size() < n) {
    for (uint32_t t : phrases[rng.below(phrases.size())]) ids.push_back(t);
    if (rng.below(10) == 0) ids.push_back(uint32_t(rng.below(16)));
  }
  ids.resize(n);
  return ids;
}

RunConfig tiny_run(const fs::path& dir, const std::string& out) {
  fs::create_directories(dir);
  data::write_olmo_raw((dir / "train.npy").string(), patterned_tokens(20000, 1), 2);
  data::write_olmo_raw((dir / "val.npy").string(), patterned_tokens(4000, 2), 2);
  RunConfig c;
  c.model.arch = "gated_residual";
  c.model.n_layer = 2;
  c.model.d_model = 32;
  c.model.n_head = 4;
  c.model.vocab_size = 16;
  c.recipe.steps = 12;
  c.recipe.seq_len = 32;
  c.recipe.global_batch_sequences = 8;
  c.recipe.micro_batch_sequences = 4;
  c.recipe.learning_rate = 1e-2;
  c.val_interval = 6;
  c.val_windows = 8;
  c.threads = 1;
  c.data.train_files = {(dir / "train.npy").string()};
  c.data.val_files = {(dir / "val.npy").string()};
  c.out_dir = (dir / out).string();
  return c;
}

std::vector<double> train_losses(const RunConfig& c) {
  H5Handle f = test::open_h5(RunPaths::of(c).run_file);
  return test::read_tensor(f.get(), "curves/train_loss");
}

// The test design at a tiny shape.
ModelConfig gated_residual_config() {
  ModelConfig c;
  c.arch = "gated_residual";
  c.n_layer = 2;
  c.d_model = 8;
  c.n_head = 2;
  c.vocab_size = 16;
  return c;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_design_registered_from_a_test_file_is_found_with_its_parameters) {
  BOOST_TEST(find_design("gated_residual").name == "gated_residual");
  BOOST_TEST(design_names().find("gated_residual") != std::string::npos);
  Model<double> model(gated_residual_config());
  BOOST_TEST(model.layout().id("blocks.1.ffn_gate") >= 0);
  BOOST_CHECK_THROW(DesignRegistration(make_design_info<GatedResidual>({.name = "gated_residual"})),
                    Error);
}

// Path weights through the gate kit: each sublayer's output reaches every later consumer with
// the mean of its gate (read back from the parameters); the default path_weights, weight 1 on
// every path, refuses a design whose entry declares branch gates.
BOOST_AUTO_TEST_CASE(a_gated_design_weighs_its_paths_by_its_gates_and_the_default_refuses_it) {
  Model<double> model(gated_residual_config());
  model.initialize(1);
  const ParameterSpec& gate = model.layout().spec(model.layout().id("blocks.0.ffn_gate"));
  for (int64_t i = 0; i < gate.size(); ++i)  // mean 0.25
    model.params().values()[gate.offset + i] = i % 2 ? 0.5 : 0.0;
  Backbone<double>& net = model.backbone();
  const std::vector<double> w = model.design().path_weights(net);
  const int n = 2 * model.config().n_layer +
                1;  // sources: embedding, sublayers 0..3; consumers 0..3, readout
  BOOST_REQUIRE(int(w.size()) == n * n);
  BOOST_TEST(w[0] == 1.0);               // the embedding into sublayer 0
  BOOST_TEST(w[1 * n + 1] == 1.0);       // sublayer 0 (gate 1 at init) into sublayer 1
  BOOST_TEST(w[2 * n + 2] == 0.25);      // sublayer 1 (blocks.0.ffn_gate) into sublayer 2
  BOOST_TEST(w[2 * n + n - 1] == 0.25);  // ... and into the readout
  BOOST_TEST(std::isnan(w[2 * n + 1]));  // not into an earlier consumer
  BOOST_CHECK_THROW(model.design().ResidualDesign<double>::path_weights(net), Error);
}

BOOST_AUTO_TEST_CASE(the_custom_design_trains_resumes_bit_for_bit_and_is_diagnosed) {
  const fs::path root = fs::temp_directory_path() / "depthbench_custom_design";
  fs::remove_all(root);
  // Uninterrupted.
  const RunConfig whole = tiny_run(root, "whole");
  BOOST_REQUIRE(train_run(whole, Communicator::world(), false).status == "completed");
  // Stopped with a checkpoint after 5 steps, then resumed.
  RunConfig part = tiny_run(root, "parts");
  part.stop_after_steps = 5;
  BOOST_REQUIRE(train_run(part, Communicator::world(), false).status == "interrupted");
  part.stop_after_steps = 0;
  BOOST_REQUIRE(train_run(part, Communicator::world(), false).status == "completed");
  const std::vector<double> a = train_losses(whole), b = train_losses(part);
  BOOST_REQUIRE(a.size() >= 2);
  BOOST_TEST(a == b, boost::test_tools::per_element());
  BOOST_TEST(a.back() < a.front());  // it learns
  // Diagnosed like any design: the observers and the default readout serve it unchanged.
  diag::DiagnoseOptions options;
  options.run_file = RunPaths::of(part).run_file;
  options.only = {"path_weights", "logitlens"};
  options.threads = 1;
  options.verbose = false;
  const diag::DiagnoseReport report = diag::run_diagnostics(options, Communicator::world());
  BOOST_REQUIRE(report.entries.size() == 2);
  for (const auto& entry : report.entries) {
    BOOST_TEST_CONTEXT(entry.name) {
      BOOST_TEST(entry.skipped.empty());
      BOOST_TEST(!entry.datasets.empty());
    }
  }
}

// `plan` sizes a suite from the registry alone: the custom design is a registered run with its
// gates counted, Pre-LN's FLOPs per parameter and a memory estimate of its own.
BOOST_AUTO_TEST_CASE(the_custom_design_appears_in_plan) {
  const sweep::Suite suite = sweep::parse_suite_text(
      "[suite]\nname = custom\ndesigns = pre_ln, gated_residual\nbudget = total 60K\n"
      "depths = 2\nshape_rule = sub1b\nheads = 2\n[learning_rates]\ndefault = 3e-3\n"
      "[recipe]\nmodel.vocab_size = 257\ntrain.steps = 10\ntrain.seq_len = 32\n"
      "train.global_batch = 8\ntrain.micro_batch = 2\ndata.train_files = none.npy\n",
      "custom_design_test");
  const std::vector<sweep::PlannedRun> runs = sweep::plan_suite(suite, "unused");
  BOOST_REQUIRE(runs.size() == 2);
  const auto of = [&](const std::string& arch) {
    for (const sweep::PlannedRun& run : runs)
      if (run.config.model.arch == arch) return run;
    BOOST_FAIL("no run of " + arch);
    return runs[0];
  };
  const sweep::PlannedRun gated = of("gated_residual"), pre_ln = of("pre_ln");
  BOOST_TEST(gated.design_registered);
  const ModelConfig& m = gated.config.model;
  BOOST_TEST(gated.counts.total - pre_ln.counts.total == 2 * m.n_layer * m.d_model);  // the gates
  BOOST_TEST(gated.flops > pre_ln.flops);
  BOOST_TEST(estimate_memory(gated.config).weights_bytes >
             estimate_memory(pre_ln.config).weights_bytes);
}
