// Every registered design, the whole model in float64: every parameter tensor's gradient
// (embedding included, which carries the input gradient) against central finite differences.
#define BOOST_TEST_MODULE model_gradcheck
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdio>
#include <limits>

#include "core/error.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"
#include "ops/cpu/gemm.hpp"
#include "support/gradcheck.hpp"

using namespace db;

namespace {

ModelConfig tiny_config(const std::string& arch) {
  ModelConfig c;
  c.arch = arch;
  c.n_layer = 4;
  c.d_model = 16;
  c.n_head = 2;
  c.vocab_size = 11;
  return c;
}

// Gradient check of one model: parameters are moved off their init (zero-initialised parts
// would otherwise hide whole paths) and every tensor is checked on a few entries.
double worst_gradient_error(Model<double>& model, std::string* worst_name) {
  const int B = 2, T = 6;
  std::vector<int32_t> tokens(B * T);
  Rng rng(7);
  for (auto& t : tokens) t = int32_t(rng.below(model.config().vocab_size));
  cpu::set_cpu_threads(1);  // tiny tensors: threads would cost more than they save
  model.initialize(3);
  Rng jitter(11);
  for (double& v : model.params().values()) v += 0.1 * jitter.normal();
  model.params().zero_grads();
  const double scale = 1.0 / (B * (T - 1));
  model.forward_backward(tokens.data(), B, T, scale);
  std::vector<double> grads(model.params().grads().begin(), model.params().grads().end());
  auto loss = [&] { return model.forward_loss(tokens.data(), B, T) * scale; };
  // Finite differences cannot resolve |fd − g| below the loss's rounding noise, about an ulp
  // of the loss per h. Deep multi-stream designs have parameters whose gradients are ~1e-8
  // (mHC φ behind its 0.01 gates), so a pure relative test at 1e-6 would judge noise: the
  // floor lets absolute differences up to 16 ulps(loss)/h pass.
  const double h = 1e-4, tolerance = 1e-6;
  const double noise_floor =
      16 * std::numeric_limits<double>::epsilon() * std::fabs(loss()) / h / tolerance;
  double worst = 0;
  for (const ParameterSpec& spec : model.layout().specs()) {
    std::vector<double> x(model.params().values().begin() + spec.offset,
                          model.params().values().begin() + spec.offset + spec.size());
    std::vector<double> g(grads.begin() + spec.offset, grads.begin() + spec.offset + spec.size());
    double* live = model.params().values().data() + spec.offset;
    auto f = [&] {
      std::copy(x.begin(), x.end(), live);
      return loss();
    };
    // Fourth order at h = 1e-4: truncation O(h⁴) and rounding noise both stay far below the
    // tolerance, also for the small gradients of post-norm designs (DeepNorm, KEEL).
    const double err = test::max_relative_error_fourth_order(f, x, g, 6, h, noise_floor);
    std::copy(x.begin(), x.end(), live);
    if (err > worst) {
      worst = err;
      *worst_name = spec.name;
    }
  }
  return worst;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_design_backward_matches_finite_differences) {
  for (const DesignInfo& design : all_designs()) {
    for (bool qk_norm : {false, true}) {
      ModelConfig c = tiny_config(design.name);
      c.qk_norm = qk_norm;
      if (qk_norm) c.n_kv_head = 1;  // GQA path too
      Model<double> model(c);
      std::string worst_name;
      const double err = worst_gradient_error(model, &worst_name);
      std::printf("gradcheck %-14s qk_norm=%d max rel error %.2e (%s)\n", design.name.c_str(),
                  int(qk_norm), err, worst_name.c_str());
      BOOST_TEST(err < 1e-6, design.name << " worst " << worst_name << " " << err);
    }
  }
}

// train.recompute = blocks re-runs each block's forward inside the backward (layer_loop.hpp):
// its gradients, too, against finite differences (recompute_test.cpp checks the same bits).
BOOST_AUTO_TEST_CASE(every_design_backward_under_recompute_matches_finite_differences) {
  for (const DesignInfo& design : all_designs()) {
    Model<double> model(tiny_config(design.name));
    model.set_recompute(Recompute::blocks);
    std::string worst_name;
    const double err = worst_gradient_error(model, &worst_name);
    std::printf("gradcheck %-14s recompute=blocks max rel error %.2e (%s)\n", design.name.c_str(),
                err, worst_name.c_str());
    BOOST_TEST(err < 1e-6, design.name << " worst " << worst_name << " " << err);
  }
}

BOOST_AUTO_TEST_CASE(parameter_counts_match_the_backbone_formula_for_pre_ln) {
  ModelConfig c;  // spec §0: L=24, d=1024, ff=2736, V=50280 → 405M
  c.n_layer = 24;
  c.d_model = 1024;
  c.vocab_size = 50280;
  const ParameterCounts n = count_parameters(c);
  const int64_t d = 1024, ff = 2736, V = 50280, L = 24;
  BOOST_TEST(c.ff_dim() == ff);
  BOOST_TEST(n.backbone == L * (4 * d * d + 3 * d * ff + 2 * d));
  BOOST_TEST(n.total == n.backbone + 2 * V * d + d);
  BOOST_TEST(n.embedding == V * d);
  BOOST_TEST(n.total / 1000000 == 405);
}

BOOST_AUTO_TEST_CASE(unknown_design_is_rejected_with_the_valid_names) {
  ModelConfig c = tiny_config("no_such_design");
  try {
    count_parameters(c);
    BOOST_FAIL("expected an error");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("pre_ln") != std::string::npos);
  }
}
