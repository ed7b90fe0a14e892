// Every registered design against the independent PyTorch reference (tests/reference/):
// identical weights and batch → the same loss, logits and every parameter gradient (float64
// and float32), and the same losses over 5 AdamW steps (float32 training path).
#define BOOST_TEST_MODULE pytorch_agreement
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>

#include "core/rng.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"
#include "ops/cpu/gemm.hpp"
#include "support/h5_tensors.hpp"
#include "support/reference_config.hpp"
#include "train/adamw.hpp"

using namespace db;

namespace {

const std::string kScript =
    std::string(DEPTHBENCH_SOURCE_DIR) + "/tests/reference/depthbench_reference.py";

ModelConfig tiny_config(const std::string& arch) {
  ModelConfig c;
  c.arch = arch;
  c.n_layer = 4;
  c.d_model = 16;
  c.n_head = 2;
  c.vocab_size = 13;
  return c;
}

struct Reference {
  double loss;
  std::vector<double> logits, adamw_losses;
  std::vector<std::vector<double>> grads;  // per parameter, layout order
};

constexpr int kBatch = 2, kSeq = 7, kAdamSteps = 5;
constexpr double kLr = 1e-2;

// Writes the model's weights and a batch, runs the reference, reads its answers.
Reference run_reference(Model<double>& model, const std::vector<int32_t>& tokens,
                        const std::string& dir) {
  const std::string in = dir + "/weights.h5", out = dir + "/reference.h5";
  {
    H5Handle f = test::create_h5(in);
    test::write_string_attribute(f.get(), "config", test::reference_config_json(model.config()));
    for (const ParameterSpec& s : model.layout().specs()) {
      std::vector<hsize_t> shape(s.shape.begin(), s.shape.end());
      test::write_tensor(f.get(), s.name, shape, model.params().values().data() + s.offset);
    }
    std::vector<int64_t> t(tokens.begin(), tokens.end());
    test::write_tensor(f.get(), "tokens", {kBatch, kSeq}, t.data());
    test::write_double_attribute(f.get(), "lr", kLr);
  }
  const std::string command = std::string(DEPTHBENCH_PYTHON) + " " + kScript + " run --weights " +
                              in + " --out " + out + " --adamw-steps " +
                              std::to_string(kAdamSteps) + " > " + dir + "/reference.log 2>&1";
  BOOST_REQUIRE_MESSAGE(std::system(command.c_str()) == 0,
                        "reference failed: see " + dir + "/reference.log");
  H5Handle f = test::open_h5(out);
  Reference r;
  r.loss = test::read_tensor(f.get(), "loss")[0];
  r.logits = test::read_tensor(f.get(), "logits");
  r.adamw_losses = test::read_tensor(f.get(), "adamw_losses");
  for (const ParameterSpec& s : model.layout().specs())
    r.grads.push_back(test::read_tensor(f.get(), "grad/" + s.name));
  return r;
}

double max_relative_difference(const std::vector<double>& ours, const std::vector<double>& theirs) {
  double scale = 1e-12, worst = 0;
  for (double v : theirs) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < ours.size(); ++i)
    worst = std::max(worst, std::fabs(ours[i] - theirs[i]) / scale);
  return worst;
}

template <class T>
std::vector<double> as_double(std::span<const T> v, int64_t offset, int64_t size) {
  return std::vector<double>(v.begin() + offset, v.begin() + offset + size);
}

// Compares loss, logits and all gradients of a model of type T against the reference.
template <class T>
double compare_gradients(const ModelConfig& c, const std::vector<double>& weights,
                         const std::vector<int32_t>& tokens, const Reference& ref,
                         std::string* worst_name) {
  Model<T> model(c);
  std::copy(weights.begin(), weights.end(), model.params().values().begin());
  model.params().zero_grads();
  const double scale = 1.0 / (kBatch * (kSeq - 1));
  const double loss = model.forward_backward(tokens.data(), kBatch, kSeq, scale) * scale;
  double worst = std::fabs(loss - ref.loss) / std::fabs(ref.loss);
  *worst_name = "loss";
  std::vector<T> logits;
  model.logits(tokens.data(), kBatch, kSeq, logits);
  // Logits of the last forward pass after gradients: rerun gradients after logits changed caches.
  const double logit_err =
      max_relative_difference(std::vector<double>(logits.begin(), logits.end()), ref.logits);
  if (logit_err > worst) worst = logit_err, *worst_name = "logits";
  const auto& specs = model.layout().specs();
  std::span<const T> grads(model.params().grads().data(), model.params().grads().size());
  for (size_t i = 0; i < specs.size(); ++i) {
    const double err =
        max_relative_difference(as_double(grads, specs[i].offset, specs[i].size()), ref.grads[i]);
    if (err > worst) worst = err, *worst_name = "grad " + specs[i].name;
  }
  return worst;
}

// 5 AdamW steps on the same batch with the float32 training path; max relative loss difference.
double compare_adamw(const ModelConfig& c, const std::vector<double>& weights,
                     const std::vector<int32_t>& tokens, const Reference& ref) {
  Model<float> model(c);
  std::copy(weights.begin(), weights.end(), model.params().values().begin());
  Recipe recipe;
  AdamW<float> optimizer(model.layout(), recipe);
  const double scale = 1.0 / (kBatch * (kSeq - 1));
  double worst = 0;
  for (int s = 0; s < kAdamSteps; ++s) {
    model.params().zero_grads();
    const double loss = model.forward_backward(tokens.data(), kBatch, kSeq, scale) * scale;
    worst = std::max(worst, std::fabs(loss - ref.adamw_losses[s]) / ref.adamw_losses[s]);
    const double norm = global_norm<float>(model.params().grads());
    optimizer.step(model.params(), kLr, norm > 1.0 ? 1.0 / norm : 1.0);
  }
  return worst;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_design_agrees_with_the_pytorch_reference) {
  cpu::set_cpu_threads(1);
  // A folder of its own: two builds may run this test at the same time on one machine.
  std::string dir = (std::filesystem::temp_directory_path() / "depthbench_pytorch_XXXXXX").string();
  BOOST_REQUIRE(::mkdtemp(dir.data()) != nullptr);
  int compared = 0;
  for (const DesignInfo& design : all_designs()) {
    if (!test::reference_implements(design.name)) continue;
    ++compared;
    for (bool gqa : {false, true}) {
      ModelConfig c = tiny_config(design.name);
      if (gqa) c.qk_norm = true, c.n_kv_head = 1;
      Model<double> model(c);
      model.initialize(5);
      Rng jitter(17);  // move zero-initialised parts off zero so they are compared too
      for (double& v : model.params().values()) v += 0.05 * jitter.normal();
      std::vector<int32_t> tokens(kBatch * kSeq);
      Rng rng(9);
      for (auto& t : tokens) t = int32_t(rng.below(c.vocab_size));
      const Reference ref = run_reference(model, tokens, dir);
      const std::vector<double> weights(model.params().values().begin(),
                                        model.params().values().end());
      std::string worst64, worst32;
      const double err64 = compare_gradients<double>(c, weights, tokens, ref, &worst64);
      const double err32 = compare_gradients<float>(c, weights, tokens, ref, &worst32);
      const double err_adam = compare_adamw(c, weights, tokens, ref);
      std::printf("pytorch %-14s gqa+qk_norm=%d float64 %.1e (%s) float32 %.1e (%s) adamw-5 %.1e\n",
                  design.name.c_str(), int(gqa), err64, worst64.c_str(), err32, worst32.c_str(),
                  err_adam);
      BOOST_TEST(err64 < 1e-9, design.name << " float64 worst " << worst64);
      BOOST_TEST(err32 < 1e-4, design.name << " float32 worst " << worst32);
      BOOST_TEST(err_adam < 1e-4, design.name << " adamw losses");
    }
  }
  BOOST_TEST(compared >= 10);  // the paper's designs, which the reference always has
}

// The design options the loop above leaves at their defaults (float64 gradients only).
BOOST_AUTO_TEST_CASE(design_option_variants_agree_with_the_pytorch_reference) {
  cpu::set_cpu_threads(1);
  std::string dir = (std::filesystem::temp_directory_path() / "depthbench_pytorch_XXXXXX").string();
  BOOST_REQUIRE(::mkdtemp(dir.data()) != nullptr);  // of its own, as above
  const std::vector<std::pair<std::string, std::map<std::string, std::string>>> variants = {
      {"deepnorm", {{"deepnorm_norm", "rmsnorm"}}},
      {"deepnorm", {{"deepnorm_alpha", "1.5"}, {"deepnorm_beta", "0.7"}}},
      {"keel", {{"keel_alpha", "3"}}},
      {"moda", {{"moda_rope_depth_keys", "true"}}},
      {"moda", {{"moda_post_norm", "true"}}},
      {"moda", {{"moda_post_norm", "true"}, {"moda_rope_depth_keys", "true"}}}};
  for (const auto& [arch, options] : variants) {
    for (bool gqa : {false, true}) {
      ModelConfig c = tiny_config(arch);
      c.design_options = options;
      if (gqa) c.qk_norm = true, c.n_kv_head = 1;
      Model<double> model(c);
      model.initialize(5);
      Rng jitter(17);
      for (double& v : model.params().values()) v += 0.05 * jitter.normal();
      std::vector<int32_t> tokens(kBatch * kSeq);
      Rng rng(9);
      for (auto& t : tokens) t = int32_t(rng.below(c.vocab_size));
      const Reference ref = run_reference(model, tokens, dir);
      const std::vector<double> weights(model.params().values().begin(),
                                        model.params().values().end());
      std::string worst64;
      const double err64 = compare_gradients<double>(c, weights, tokens, ref, &worst64);
      std::string label = arch;
      for (const auto& [k, v] : options) label += " " + k + "=" + v;
      std::printf("pytorch %s gqa+qk_norm=%d float64 %.1e (%s)\n", label.c_str(), int(gqa), err64,
                  worst64.c_str());
      BOOST_TEST(err64 < 1e-9, label << " float64 worst " << worst64);
    }
  }
}
