// The bf16 copy of the weights that bf16 storage reads (model/parameters.hpp): the AdamW step
// writes it in the same pass as the update, any other change of the weights (a load, a poke)
// leaves it stale and the next forward rounds it afresh, and a model without bf16 storage keeps
// none. Bits: a training run whose copy comes from the AdamW step gives the same losses and
// weights as one whose copy is rounded afresh before every micro-batch (what the cores did
// before the copy existed: each rounded the weights it read at every forward).
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE bf16_weight_copy
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/bfloat16.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"
#include "support/design_variants.hpp"
#include "train/adamw.hpp"

using namespace db;

namespace {

// The small model of the model tests, three blocks.
ModelConfig config_of(const std::string& arch) {
  return test::Variant{arch, {}}.small_config(3);
}

std::vector<int32_t> random_tokens(int64_t count, int vocab, uint64_t seed) {
  std::vector<int32_t> tokens(count);
  Rng rng(seed);
  for (int32_t& t : tokens) t = int32_t(rng.below(vocab));
  return tokens;
}

constexpr int kBatch = 2, kSeqLen = 9;

// Elements of the copy that are not the bf16 rounding of the values, over the whole padded array.
int64_t stale_elements(const ParameterStore<float>& params) {
  const std::vector<float> values = params.values_to_host();
  const std::vector<bfloat16> copy = params.bf16_copy_to_host();
  BOOST_REQUIRE(copy.size() == values.size());
  int64_t stale = 0;
  for (size_t i = 0; i < values.size(); ++i) stale += copy[i].bits != to_bfloat16(values[i]).bits;
  return stale;
}

// One step of forward + backward on a fixed batch, then AdamW.
void train_step(Model<float>& model, AdamW<float>& optimizer, const std::vector<int32_t>& tokens) {
  model.params().zero_grads();
  model.forward_backward(tokens.data(), kBatch, kSeqLen, 1.0);
  optimizer.step(model.params(), 1e-2, 1.0);
}

struct Curve {
  std::vector<double> losses;
  std::vector<float> weights;
};

// steps × 2 micro-batches with AdamW; stale_before_each_micro_batch takes the values mutably
// before every micro-batch, so that the forward rounds the whole copy afresh instead of reading
// what the AdamW step wrote.
Curve train(const std::string& arch, int steps, bool stale_before_each_micro_batch) {
  const ModelConfig c = config_of(arch);
  Model<float> model(c, find_backend("cpu"), OpsOptions{.activation_dtype = ActivationDtype::bf16});
  model.initialize(5);
  AdamW<float> optimizer(model.layout(), Recipe{});
  Curve curve;
  for (int step = 0; step < steps; ++step) {
    model.params().zero_grads();
    double loss = 0;
    for (int micro = 0; micro < 2; ++micro) {
      if (stale_before_each_micro_batch) model.params().value_buffer();
      const std::vector<int32_t> tokens =
          random_tokens(kBatch * kSeqLen, c.vocab_size, step * 2 + micro);
      loss += model.forward_backward(tokens.data(), kBatch, kSeqLen, 0.5);
    }
    curve.losses.push_back(loss);
    optimizer.step(model.params(), 1e-2, 1.0);
  }
  curve.weights = model.params().values_to_host();
  return curve;
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_adamw_step_writes_the_bf16_rounding_of_the_weights_it_updates) {
  const ModelConfig c = config_of("pre_ln");
  Model<float> model(c, find_backend("cpu"), OpsOptions{.activation_dtype = ActivationDtype::bf16});
  model.initialize(3);
  AdamW<float> optimizer(model.layout(), Recipe{});
  const std::vector<int32_t> tokens = random_tokens(kBatch * kSeqLen, c.vocab_size, 1);
  BOOST_TEST(model.params().has_bf16_copy());
  BOOST_TEST(!model.params().bf16_copy_fresh());  // initialised weights, never rounded
  model.params().zero_grads();
  model.forward_backward(tokens.data(), kBatch, kSeqLen, 1.0);
  BOOST_TEST(model.params().bf16_copy_fresh());  // the forward rounded them
  const std::vector<bfloat16> before = model.params().bf16_copy_to_host();
  optimizer.step(model.params(), 1e-2, 1.0);
  BOOST_TEST(model.params().bf16_copy_fresh());  // no rounding pass needed before the next one
  BOOST_TEST(stale_elements(model.params()) == 0);
  const std::vector<bfloat16> after = model.params().bf16_copy_to_host();
  BOOST_TEST(std::memcmp(before.data(), after.data(), before.size() * sizeof(bfloat16)) != 0);
}

BOOST_AUTO_TEST_CASE(a_weight_load_leaves_the_copy_stale_until_the_next_forward_rounds_it) {
  const ModelConfig c = config_of("pre_ln");
  Model<float> model(c, find_backend("cpu"), OpsOptions{.activation_dtype = ActivationDtype::bf16});
  model.initialize(3);
  const std::vector<int32_t> tokens = random_tokens(kBatch * kSeqLen, c.vocab_size, 1);
  model.forward_loss(tokens.data(), kBatch, kSeqLen);
  BOOST_TEST(model.params().bf16_copy_fresh());
  Model<float> other(c);
  other.initialize(4);
  model.params().copy_values_from_host(other.params().values_to_host());  // a checkpoint load
  BOOST_TEST(!model.params().bf16_copy_fresh());
  BOOST_TEST(stale_elements(model.params()) > 0);
  // Reading the stale copy is refused in one line that says what to do.
  try {
    model.backbone().bf16_weight(model.layout().id("blocks.0.wq"));
    BOOST_FAIL("expected an error");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("stale") != std::string::npos);
    BOOST_TEST(std::string(e.what()).find('\n') == std::string::npos);
  }
  // The loaded weights give the loss the model they came from gives.
  const double loaded = model.forward_loss(tokens.data(), kBatch, kSeqLen);
  BOOST_TEST(model.params().bf16_copy_fresh());
  BOOST_TEST(stale_elements(model.params()) == 0);
  Model<float> reference(c, find_backend("cpu"),
                         OpsOptions{.activation_dtype = ActivationDtype::bf16});
  reference.initialize(4);
  const double expected = reference.forward_loss(tokens.data(), kBatch, kSeqLen);
  BOOST_TEST(std::memcmp(&loaded, &expected, sizeof(double)) == 0);
}

BOOST_AUTO_TEST_CASE(a_poked_weight_reaches_the_copy_at_the_next_forward) {
  const ModelConfig c = config_of("pre_ln");
  Model<float> model(c, find_backend("cpu"), OpsOptions{.activation_dtype = ActivationDtype::bf16});
  model.initialize(3);
  AdamW<float> optimizer(model.layout(), Recipe{});
  const std::vector<int32_t> tokens = random_tokens(kBatch * kSeqLen, c.vocab_size, 1);
  train_step(model, optimizer, tokens);
  BOOST_TEST(model.params().bf16_copy_fresh());
  const int w1 = model.layout().id("blocks.1.w1");
  const double before = model.forward_loss(tokens.data(), kBatch, kSeqLen);
  model.params().value(w1)[3] = 0.75f;  // as a test or a diagnostic might
  BOOST_TEST(!model.params().bf16_copy_fresh());
  const double after = model.forward_loss(tokens.data(), kBatch, kSeqLen);
  BOOST_TEST(stale_elements(model.params()) == 0);
  BOOST_TEST(model.params().bf16_copy_to_host()[model.layout().spec(w1).offset + 3].bits ==
             to_bfloat16(0.75f).bits);
  BOOST_TEST(after != before);  // the forward read the poked weight
}

BOOST_AUTO_TEST_CASE(reading_the_weights_does_not_make_the_copy_stale) {
  const ModelConfig c = config_of("pre_ln");
  Model<float> model(c, find_backend("cpu"), OpsOptions{.activation_dtype = ActivationDtype::bf16});
  model.initialize(3);
  const std::vector<int32_t> tokens = random_tokens(kBatch * kSeqLen, c.vocab_size, 1);
  model.forward_loss(tokens.data(), kBatch, kSeqLen);
  const ParameterStore<float>& params = std::as_const(model.params());
  params.value(0);
  params.value_buffer();
  params.values_to_host();
  model.backbone().value(model.layout().id("blocks.0.q_norm"));
  BOOST_TEST(model.params().bf16_copy_fresh());
}

BOOST_AUTO_TEST_CASE(
    the_copy_from_the_adamw_step_gives_the_bits_of_a_copy_rounded_every_micro_batch) {
  // MoDA also reads its depth projections through the copy.
  for (const std::string arch : {"pre_ln", "moda"}) {
    BOOST_TEST_CONTEXT(arch) {
      const Curve written = train(arch, 4, false);
      const Curve rounded = train(arch, 4, true);
      BOOST_TEST(std::memcmp(written.losses.data(), rounded.losses.data(),
                             written.losses.size() * sizeof(double)) == 0);
      BOOST_TEST(written.weights == rounded.weights);
    }
  }
}

BOOST_AUTO_TEST_CASE(without_bf16_storage_the_parameters_keep_no_copy) {
  Model<float> fp32(config_of("pre_ln"), find_backend("cpu"),
                    OpsOptions{.activation_dtype = ActivationDtype::fp32});
  BOOST_TEST(!fp32.params().has_bf16_copy());
  BOOST_TEST(fp32.params().bf16_copy_for_write() == nullptr);
  Model<double> wide(config_of("pre_ln"));
  BOOST_TEST(!wide.params().has_bf16_copy());
}
