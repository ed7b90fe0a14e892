// train.state_dtype = bf16: HC/mHC round their streams (model/residual/state_rounding.hpp) and
// AttnRes stores its sources in bf16 (state_values.hpp), and the gradients of both are kept in
// bf16 between sublayers; the arithmetic stays in the model type. On the CPU, for every design with
// such a state (and the options that change it): the loss and gradients stay within bf16 tolerance
// of fp32 state yet differ from it (the state really was rounded; HC/mHC's depth states hold bf16
// values only); two runs and train.recompute = blocks give the same bits; a model in double runs it
// too; a design without a state of its own refuses it in one line.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE bf16_state
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/bfloat16.hpp"
#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"
#include "support/design_variants.hpp"
#include "support/model_setup.hpp"

using namespace db;

namespace {

using test::Variant;

struct Step {
  double loss;
  std::vector<double> grads;
  bool depth_states_are_bf16 = true;  // every value of every observed depth state
};

template <class T>
bool representable_in_bf16(const T* x, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (double(x[i]) != double(to_float(to_bfloat16(float(x[i]))))) return false;
  return true;
}

// Two forward + backward passes (the second reuses the first's buffers) of a model moved off its
// init, so that zero-initialised mixers carry gradients.
template <class T>
Step train_step(const ModelConfig& c, bool bf16_state, Recompute recompute = Recompute::none) {
  Model<T> model(c, find_backend("cpu"), OpsOptions{.bf16_state = bf16_state});
  test::initialize_off_init(model);
  model.set_recompute(recompute);
  Step step{};
  ForwardObserver<T> observer;
  observer.depth_state = [&](int, const T* state, int64_t rows, int width) {
    if (state && !representable_in_bf16(state, rows * width)) step.depth_states_are_bf16 = false;
  };
  model.backbone().observer = &observer;
  const int B = 2, T_len = 9;
  std::vector<int32_t> tokens(B * T_len);
  Rng rng(3);
  for (int32_t& t : tokens) t = int32_t(rng.below(c.vocab_size));
  for (int repeat = 0; repeat < 2; ++repeat) {
    model.params().zero_grads();
    step.loss = model.forward_backward(tokens.data(), B, T_len, 0.5);
  }
  for (T g : model.params().grad_buffer().to_host()) step.grads.push_back(double(g));
  return step;
}

double relative_distance(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (a[i] - b[i]) * (a[i] - b[i]), n += b[i] * b[i];
  return std::sqrt(d / n);
}

std::vector<Variant> variants_with_state() {
  std::vector<Variant> v;
  for (const Variant& variant : test::state_changing_variants())
    if (find_design(variant.arch).rounds_state) v.push_back(variant);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_CASE(bf16_state_stays_within_bf16_tolerance_of_fp32_state) {
  const std::vector<Variant> variants = variants_with_state();
  BOOST_TEST(variants.size() >= 5u);  // hc (two readouts), mhc, both AttnRes
  for (const Variant& v : variants) {
    BOOST_TEST_CONTEXT(v.name()) {
      const ModelConfig c = v.small_config(4, false);
      const Step wide = train_step<float>(c, false);
      const Step narrow = train_step<float>(c, true);
      // bf16 keeps 8 significant bits (relative rounding 2⁻⁹); the loss sums 2·8 positions.
      BOOST_TEST(std::abs(narrow.loss - wide.loss) <= 2e-3 * std::abs(wide.loss));
      const double distance = relative_distance(narrow.grads, wide.grads);
      BOOST_TEST_MESSAGE(v.name() << ": relative gradient distance " << distance);
      BOOST_TEST(distance < 3e-2);
      BOOST_TEST(narrow.grads != wide.grads);  // the state really was rounded
      BOOST_TEST(narrow.loss != wide.loss);
      if (v.arch == "hc" || v.arch == "mhc") {  // their depth states are the streams
        BOOST_TEST(narrow.depth_states_are_bf16);
        BOOST_TEST(!wide.depth_states_are_bf16);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(bf16_state_is_deterministic_and_exact_under_recompute) {
  for (const Variant& v : variants_with_state()) {
    BOOST_TEST_CONTEXT(v.name()) {
      const ModelConfig c = v.small_config();
      const Step first = train_step<float>(c, true);
      const Step second = train_step<float>(c, true);
      const Step recomputed = train_step<float>(c, true, Recompute::blocks);
      BOOST_TEST(std::memcmp(&first.loss, &second.loss, sizeof(double)) == 0);
      BOOST_TEST(first.grads == second.grads);
      BOOST_TEST(std::memcmp(&first.loss, &recomputed.loss, sizeof(double)) == 0);
      BOOST_TEST(first.grads == recomputed.grads);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_double_model_rounds_its_state_through_float) {
  const ModelConfig c = Variant{"hc", {}}.small_config(4, false);
  const Step wide = train_step<double>(c, false);
  const Step narrow = train_step<double>(c, true);
  BOOST_TEST(narrow.depth_states_are_bf16);
  BOOST_TEST(std::abs(narrow.loss - wide.loss) <= 2e-3 * std::abs(wide.loss));
  BOOST_TEST(relative_distance(narrow.grads, wide.grads) < 3e-2);
  BOOST_TEST(narrow.grads != wide.grads);
}

BOOST_AUTO_TEST_CASE(a_design_without_a_state_of_its_own_refuses_it_in_one_line) {
  for (const DesignInfo& d : all_designs()) {
    if (d.rounds_state) continue;
    BOOST_TEST_CONTEXT(d.name) {
      try {
        Model<float> model(Variant{d.name, {}}.small_config(4, false), find_backend("cpu"),
                           OpsOptions{.bf16_state = true});
        BOOST_FAIL("expected an error");
      } catch (const Error& e) {
        const std::string message = e.what();
        BOOST_TEST(message.find("train.state_dtype = bf16: " + d.name) == 0);
        BOOST_TEST(message.find('\n') == std::string::npos);
      }
    }
  }
  BOOST_TEST(parse_state_dtype("bf16"));
  BOOST_TEST(!parse_state_dtype("fp32"));
  BOOST_CHECK_THROW(parse_state_dtype("auto"), Error);
}
