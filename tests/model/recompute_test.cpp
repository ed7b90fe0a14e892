// train.recompute = blocks (layer_loop.hpp): the forward keeps only each block's input and the
// backward re-runs a block's forward just before its backward. For every registered design (and
// the options that change a design's state), in float and double, with a skipped and with
// swapped blocks: the same loss and gradients, bit for bit, as keeping everything; and the model
// holds fewer bytes at its peak.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE recompute
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"
#include "support/design_variants.hpp"
#include "support/model_setup.hpp"

using namespace db;

namespace {

using test::Variant;

enum class Schedule { plain, skip, swap };

struct Step {
  double loss;
  std::vector<char> grad_bytes;
};

// One forward + backward (two, to cover buffers reused from a previous step) of a model whose
// parameters are moved off their init, so that zero-initialised mixers carry gradients.
template <class T>
Step train_step(const ModelConfig& c, Schedule schedule, Recompute recompute,
                bool fused_kernels = true) {
  Model<T> model(c);
  test::initialize_off_init(model);
  model.set_recompute(recompute);
  model.backbone().set_fused_kernels(fused_kernels);
  if (schedule == Schedule::skip) model.backbone().skip_block(1);
  if (schedule == Schedule::swap) model.backbone().swap_blocks(1, 2);
  const int B = 2, T_len = 7;
  std::vector<int32_t> tokens(B * T_len);
  Rng rng(3);
  for (int32_t& t : tokens) t = int32_t(rng.below(c.vocab_size));
  Step step{};
  for (int repeat = 0; repeat < 2; ++repeat) {
    model.params().zero_grads();
    step.loss = model.forward_backward(tokens.data(), B, T_len, 0.5);
  }
  const std::vector<T> grads = model.params().grad_buffer().to_host();
  step.grad_bytes.resize(grads.size() * sizeof(T));
  std::memcpy(step.grad_bytes.data(), grads.data(), step.grad_bytes.size());
  return step;
}

template <class T>
void check_same_bits(const char* type) {
  for (const Variant& v : test::state_changing_variants())
    for (Schedule s : {Schedule::plain, Schedule::skip, Schedule::swap}) {
      BOOST_TEST_CONTEXT(v.name() << ", " << type << ", schedule " << int(s)) {
        const ModelConfig c = v.small_config(4);
        const Step kept = train_step<T>(c, s, Recompute::none);
        const Step recomputed = train_step<T>(c, s, Recompute::blocks);
        BOOST_TEST(std::memcmp(&kept.loss, &recomputed.loss, sizeof(double)) == 0);
        BOOST_TEST(kept.grad_bytes == recomputed.grad_bytes);
      }
    }
}

// AttnRes's backward with train.fused_kernels on gathers each source's gradient from its
// consumers' (w, dlogit) after their backward — for the FFN input mixes, after release_block has
// freed their weights — and off adds it consumer by consumer: either way the same bits with and
// without recomputation, and the two forms agree to rounding (relative to the largest
// gradient), with skipped and swapped blocks.
template <class T>
void check_attnres_backward_forms(const char* type, double tolerance) {
  for (const Variant& v : test::state_changing_variants()) {
    if (v.arch != "attnres_full" && v.arch != "attnres_block") continue;
    for (Schedule s : {Schedule::plain, Schedule::skip, Schedule::swap}) {
      BOOST_TEST_CONTEXT(v.name() << ", " << type << ", schedule " << int(s)) {
        const ModelConfig c = v.small_config(4);
        std::vector<std::vector<T>> kept_grads;
        for (bool fused : {true, false}) {
          const Step kept = train_step<T>(c, s, Recompute::none, fused);
          const Step recomputed = train_step<T>(c, s, Recompute::blocks, fused);
          BOOST_TEST(std::memcmp(&kept.loss, &recomputed.loss, sizeof(double)) == 0);
          BOOST_TEST(kept.grad_bytes == recomputed.grad_bytes, "fused " << fused);
          kept_grads.emplace_back(kept.grad_bytes.size() / sizeof(T));
          std::memcpy(kept_grads.back().data(), kept.grad_bytes.data(), kept.grad_bytes.size());
        }
        double diff = 0, scale = 0;
        for (size_t i = 0; i < kept_grads[1].size(); ++i) {
          diff = std::max(diff, std::abs(double(kept_grads[0][i]) - double(kept_grads[1][i])));
          scale = std::max(scale, std::abs(double(kept_grads[1][i])));
        }
        BOOST_TEST_MESSAGE(v.name() << ", " << type << ", schedule " << int(s)
                                    << ": gathered against added, gradients differ by "
                                    << diff / scale << " of their largest");
        BOOST_TEST(diff <= tolerance * scale);
      }
    }
  }
}

// The most host bytes a model's buffers hold during one training step beyond what they held
// before it (the parameters, gradients and the buffers of an earlier step).
size_t peak_step_bytes(const ModelConfig& c, Recompute recompute) {
  Model<float> model(c);
  model.initialize(7);
  model.set_recompute(recompute);
  std::vector<int32_t> tokens(2 * 16);
  Rng rng(3);
  for (int32_t& t : tokens) t = int32_t(rng.below(c.vocab_size));
  const size_t before = memory::host_bytes_in_use();
  memory::reset_host_peak();
  model.forward_backward(tokens.data(), 2, 16, 1.0);
  return memory::host_peak_bytes() - before;
}

}  // namespace

BOOST_AUTO_TEST_CASE(recomputed_blocks_give_the_same_bits_in_float) {
  check_same_bits<float>("float");
}

BOOST_AUTO_TEST_CASE(recomputed_blocks_give_the_same_bits_in_double) {
  check_same_bits<double>("double");
}

BOOST_AUTO_TEST_CASE(attnres_gathered_and_added_backwards_recomputed_skipped_and_swapped) {
  check_attnres_backward_forms<float>("float", 1e-5);
  check_attnres_backward_forms<double>("double", 1e-12);
}

BOOST_AUTO_TEST_CASE(a_forward_alone_runs_under_recompute) {
  for (const Variant& v : test::state_changing_variants()) {
    BOOST_TEST_CONTEXT(v.name()) {
      const ModelConfig c = v.small_config(3);
      std::vector<int32_t> tokens(2 * 5, 1);
      Model<double> kept(c), recomputed(c);
      kept.initialize(5);
      recomputed.initialize(5);
      recomputed.set_recompute(Recompute::blocks);
      BOOST_TEST(kept.forward_loss(tokens.data(), 2, 5) ==
                 recomputed.forward_loss(tokens.data(), 2, 5));
    }
  }
}

BOOST_AUTO_TEST_CASE(recomputed_blocks_hold_less_memory_at_the_peak) {
  for (const DesignInfo& d : all_designs()) {
    BOOST_TEST_CONTEXT(d.name) {
      const ModelConfig c = Variant{d.name, {}}.small_config(8);
      const size_t kept = peak_step_bytes(c, Recompute::none);
      const size_t recomputed = peak_step_bytes(c, Recompute::blocks);
      BOOST_TEST_MESSAGE(d.name << ": peak step bytes " << kept << " kept, " << recomputed
                                << " recomputed");
      BOOST_TEST(recomputed < kept);
      // A single-stream design keeps one d-vector per block instead of ≈ 8d + 3·ff.
      if (d.name == "pre_ln") BOOST_TEST(recomputed < kept / 2);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_bad_value_is_refused_in_one_line) {
  BOOST_TEST(std::string(recompute_name(parse_recompute("none"))) == "none");
  BOOST_TEST(std::string(recompute_name(parse_recompute("blocks"))) == "blocks");
  try {
    parse_recompute("layers");
    BOOST_FAIL("expected an error");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()) == "train.recompute must be none or blocks, not 'layers'");
  }
}
