// The residual add fused with the norm after it (ops.hpp add_rmsnorm_forward; stream.hpp's
// add_to_stream, one call at the point of the add; sublayer.hpp's sum + N_out): which designs
// run it how often, counted through the op timer's calls (ops/timed_ops.hpp), and that the
// fused path gives the bits of the unfused one — a depth-state observer reads the stream the
// fused call wrote, and under train.recompute = blocks each block's last add runs on its own,
// with the same bits. And train.fused_kernels = off (ops_options.hpp):
// every design runs the separate ops instead, with the same bits on the CPU (HC, mHC and AttnRes:
// to rounding, below).
#define BOOST_TEST_MODULE fused_residual_norm
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "model/model.hpp"
#include "ops/backend.hpp"
#include "support/design_variants.hpp"

using namespace db;

namespace {

constexpr int kLayers = 3, kBatch = 2, kSeq = 8;

ModelConfig tiny_config(const std::string& arch) {
  ModelConfig c;
  c.arch = arch;
  c.n_layer = kLayers;
  c.d_model = 32;
  c.n_head = 4;
  c.vocab_size = 61;
  return c;
}

std::vector<int32_t> tokens() {
  Rng rng(11, "fused-residual-norm-test");
  std::vector<int32_t> t(kBatch * kSeq);
  for (int32_t& x : t) x = int32_t(rng.below(61));
  return t;
}

// Calls of each op name in one forward and backward of `config` on the CPU in float.
struct Run {
  double loss = 0;
  std::vector<float> grads;
  std::vector<SectionTimer::Total> totals;
  int64_t calls(const std::string& op) const {
    for (const auto& t : totals)
      if (t.section == op) return t.calls;
    return 0;
  }
  // Residual adds run inside a norm's pass, with (Sandwich-LN) or without a branch norm.
  int64_t fused_adds() const {
    return calls("add_rmsnorm_forward") + calls("norm_add_rmsnorm_forward");
  }
};

Run run(const ModelConfig& config, Recompute recompute = Recompute::none,
        bool observe_depth_states = false, const OpsOptions& options = {}) {
  Backend& cpu = find_backend("cpu");
  std::unique_ptr<SectionTimer> timer = cpu.make_section_timer();
  cpu.attach_section_timer(timer.get());
  Model<float> model(config, cpu, options);
  cpu.attach_section_timer(nullptr);
  model.initialize(5);
  model.set_recompute(recompute);
  ForwardObserver<float> observer;
  int observed = 0;
  observer.depth_state = [&](int, const float* z, int64_t, int) { observed += z != nullptr; };
  if (observe_depth_states) model.backbone().observer = &observer;
  model.params().zero_grads();
  const std::vector<int32_t> batch = tokens();
  Run r;
  r.loss = model.forward_backward(batch.data(), kBatch, kSeq, 1.0);
  r.grads = model.params().grad_buffer().to_host();
  r.totals = timer->totals();
  if (observe_depth_states) BOOST_TEST(observed == kLayers + 1);  // every z_l, none null
  return r;
}

// The designs whose fused kernels change the rounding, not the math. HC and mHC run their mix
// backward in one pass per token when fused (stream_kernels.hpp MixGrads): the same sums in the
// same order as the two passes, but the compiler contracts a·b + c into a fused multiply-add in
// one and not in the other, so the gradients agree to rounding, not bit for bit (exactly under
// -ffp-contract=off). Full and Block AttnRes run their depth softmax forward in one read of the
// sources (depth_softmax.hpp OnePassForward): an online softmax, whose mix sums rescaled terms.
bool fused_rounds_differently(const std::string& arch) {
  return arch == "hc" || arch == "mhc" || arch == "attnres_full" || arch == "attnres_block";
}

// Largest |a − b| over max |b|.
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return diff / scale;
}

}  // namespace

BOOST_AUTO_TEST_CASE(pre_ln_and_lns_fuse_every_residual_add_with_the_next_norm) {
  for (const char* arch : {"pre_ln", "lns"}) {
    BOOST_TEST_CONTEXT(arch) {
      const Run r = run(tiny_config(arch));
      // 2L − 1 sublayer boundaries and the final norm; only block 0's first norm reads the
      // embedding with nothing to add.
      BOOST_TEST(r.calls("add_rmsnorm_forward") == 2 * kLayers);
      BOOST_TEST(r.calls("rmsnorm_forward") == 1);
      // No add on its own; LNS scales the norm outputs of blocks b ≥ 1 (s_0 = 1), forward and
      // backward.
      BOOST_TEST(r.calls("axpby") == (std::string(arch) == "lns" ? 4 * (kLayers - 1) : 0));
    }
  }
}

BOOST_AUTO_TEST_CASE(sandwich_ln_and_moda_fuse_every_residual_add_with_the_next_pre_norm) {
  // 2L − 1 sublayer boundaries and the final norm, as Pre-LN; Sandwich-LN's branch norm (one
  // per sublayer) runs in the same pass; only the first pre-norm is a plain norm.
  const Run sandwich = run(tiny_config("sandwich_ln"));
  BOOST_TEST(sandwich.calls("norm_add_rmsnorm_forward") == 2 * kLayers);
  BOOST_TEST(sandwich.calls("add_rmsnorm_forward") == 0);
  BOOST_TEST(sandwich.calls("rmsnorm_forward") == 1);
  // No add on its own, and no pass for the backward's dx = 1·dz: dz is read where it is.
  BOOST_TEST(sandwich.calls("axpby") == 0);
  BOOST_TEST(sandwich.calls("copy") == 1);  // end_backward's dx0
  for (const char* rope_depth_keys : {"false", "true"}) {
    BOOST_TEST_CONTEXT("moda, moda_rope_depth_keys = " << rope_depth_keys) {
      ModelConfig c = tiny_config("moda");
      c.design_options["moda_rope_depth_keys"] = rope_depth_keys;
      const Run moda = run(c);
      BOOST_TEST(moda.calls("add_rmsnorm_forward") == 2 * kLayers);
      BOOST_TEST(moda.calls("rmsnorm_forward") == 1);
    }
  }
  // moda_post_norm: the add and N_out in one call (as DeepNorm), the final norm on its own.
  ModelConfig post = tiny_config("moda");
  post.design_options["moda_post_norm"] = "true";
  const Run moda_post = run(post);
  BOOST_TEST(moda_post.calls("add_rmsnorm_forward") == 2 * kLayers);
  BOOST_TEST(moda_post.calls("rmsnorm_forward") == 1);
}

BOOST_AUTO_TEST_CASE(observed_depth_states_keep_every_add_fused_and_give_the_same_bits) {
  for (const char* arch : {"pre_ln", "sandwich_ln", "moda"}) {
    BOOST_TEST_CONTEXT(arch) {
      const Run fused = run(tiny_config(arch));
      const Run observed = run(tiny_config(arch), Recompute::none, /*observe=*/true);
      // The add and the next norm are one call at the point of the add, which writes the
      // stream: a depth-state observer reads it as it is, and nothing runs on its own for it.
      BOOST_TEST(observed.fused_adds() == fused.fused_adds());
      BOOST_TEST(observed.fused_adds() == 2 * kLayers);
      BOOST_TEST(observed.calls("rmsnorm_forward") == fused.calls("rmsnorm_forward"));
      BOOST_TEST(observed.calls("axpby") == fused.calls("axpby"));
      BOOST_TEST(observed.loss == fused.loss);
      BOOST_TEST(observed.grads == fused.grads, boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(recomputed_blocks_fuse_inside_each_block_and_give_the_same_bits) {
  for (const char* arch : {"pre_ln", "sandwich_ln", "moda"}) {
    BOOST_TEST_CONTEXT(arch) {
      const Run fused = run(tiny_config(arch));
      const Run recomputed = run(tiny_config(arch), Recompute::blocks);
      // The add at a block's end runs on its own (the block keeps one buffer, and its re-run
      // must not write the next block's); the add inside the block is fused, in the forward and
      // in the backward's re-run.
      BOOST_TEST(recomputed.fused_adds() == 2 * kLayers);
      BOOST_TEST(recomputed.loss == fused.loss);
      BOOST_TEST(recomputed.grads == fused.grads, boost::test_tools::per_element());
    }
  }
  const Run pre_ln = run(tiny_config("pre_ln"), Recompute::blocks);
  BOOST_TEST(pre_ln.calls("rmsnorm_forward") == 2 * kLayers + 1);
}

BOOST_AUTO_TEST_CASE(deepnorm_and_keel_add_and_post_norm_in_one_call) {
  const Run deepnorm = run(tiny_config("deepnorm"));
  BOOST_TEST(deepnorm.calls("add_layernorm_forward") == 2 * kLayers);
  BOOST_TEST(deepnorm.calls("layernorm_forward") == 0);
  BOOST_TEST(deepnorm.calls("copy") == 1);  // end_backward's dx0: no copy of x for α·x

  ModelConfig rms = tiny_config("deepnorm");
  rms.design_options["deepnorm_norm"] = "rmsnorm";
  const Run deepnorm_rms = run(rms);
  BOOST_TEST(deepnorm_rms.calls("add_rmsnorm_forward") == 2 * kLayers);

  // KEEL: block 0's attention has no out-norm (a plain Pre-LN add), which runs with block 0's
  // FFN pre-norm: every sublayer's add is fused.
  const Run keel = run(tiny_config("keel"));
  BOOST_TEST(keel.calls("add_rmsnorm_forward") == 2 * kLayers);
  BOOST_TEST(keel.calls("rmsnorm_forward") == 2 * kLayers);  // 2L − 1 N_in, the final norm
}

BOOST_AUTO_TEST_CASE(fused_kernels_off_runs_the_separate_ops_with_the_same_bits) {
  OpsOptions off;
  off.fused_kernels = false;
  for (const test::Variant& v : test::state_changing_variants())
    for (bool qk_norm_bf16 : {false, true}) {  // + QK-norm, GQA and bf16 storage (QK-norm + RoPE)
      BOOST_TEST_CONTEXT(v.name() << (qk_norm_bf16 ? " qk_norm+gqa+bf16" : "")) {
        ModelConfig c = tiny_config(v.arch);
        c.design_options = v.options;
        OpsOptions on, separate = off;
        if (qk_norm_bf16) {
          c.qk_norm = true;
          c.n_kv_head = 2;
          on.activation_dtype = separate.activation_dtype = ActivationDtype::bf16;
        }
        const Run fused = run(c, Recompute::none, false, on);
        const Run unfused = run(c, Recompute::none, false, separate);
        BOOST_TEST(unfused.fused_adds() == 0);
        BOOST_TEST(unfused.calls("add_layernorm_forward") == 0);
        if (fused_rounds_differently(v.arch)) {
          // Rounding only (see the file comment): loss and gradients to a few float roundings.
          BOOST_TEST(unfused.loss == fused.loss, boost::test_tools::tolerance(1e-6));
          const double diff = relative_difference(unfused.grads, fused.grads);
          BOOST_TEST_MESSAGE(v.name() << ": gradients differ by " << diff << " of their largest");
          BOOST_TEST(diff < 1e-5);
        } else {
          BOOST_TEST(unfused.loss == fused.loss);
          BOOST_TEST(unfused.grads == fused.grads, boost::test_tools::per_element());
        }
      }
    }
}
