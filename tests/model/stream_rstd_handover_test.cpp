// HC's and mHC's stream norm rstd handed over by the mix that wrote the state (train.fused_kernels;
// stream_readout.hpp MultiStream, stream_kernels.hpp MixRstd) instead of the next sublayer's own
// pass over the state: used only for exactly the state it was computed for. In float and double,
// for every way a state reaches a sublayer — from the previous sublayer's mix, as H_0 (the first
// block, or the second when the first is skipped), across a skipped block, through swapped
// blocks, restored under train.recompute = blocks, watched by a depth-state observer, and at the
// start of a second step whose last state had a valid rstd —
// - the forward gives the loss bits of train.fused_kernels = off (the own pass every time; the
//   gradients differ there by MixGrads' rounding, fused_residual_norm_test);
// - recompute and observers change no bit of the loss or the gradients;
// - a second step gives the bits of a fresh model's first step on the same tokens.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE stream_rstd_handover
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "model/model.hpp"
#include "support/design_variants.hpp"
#include "support/model_setup.hpp"

using namespace db;

namespace {

enum class Schedule { plain, skip_first, skip_middle, swap };

struct Setup {
  bool fused = true;
  Schedule schedule = Schedule::plain;
  Recompute recompute = Recompute::none;
  bool observe = false;
  int steps = 1;  // the first steps - 1 on other tokens
};

struct Step {
  double loss;
  std::vector<char> grad_bytes;
};

std::vector<int32_t> tokens(const ModelConfig& c, uint64_t seed) {
  std::vector<int32_t> t(2 * 7);
  Rng rng(seed);
  for (int32_t& x : t) x = int32_t(rng.below(c.vocab_size));
  return t;
}

// The last of s.steps forward + backward passes of a model moved off its init (so that every
// mixer and norm gain carries values of its own).
template <class T>
Step run(const ModelConfig& c, const Setup& s) {
  Model<T> model(c);
  test::initialize_off_init(model);
  model.backbone().set_fused_kernels(s.fused);
  model.set_recompute(s.recompute);
  if (s.schedule == Schedule::skip_first) model.backbone().skip_block(0);
  if (s.schedule == Schedule::skip_middle) model.backbone().skip_block(1);
  if (s.schedule == Schedule::swap) model.backbone().swap_blocks(1, 2);
  ForwardObserver<T> observer;
  int observed = 0;
  observer.depth_state = [&](int, const T* z, int64_t, int) { observed += z != nullptr; };
  if (s.observe) model.backbone().observer = &observer;
  Step step{};
  for (int i = 0; i < s.steps; ++i) {
    const std::vector<int32_t> batch = tokens(c, i + 1 == s.steps ? 3 : 100 + i);
    model.params().zero_grads();
    step.loss = model.forward_backward(batch.data(), 2, 7, 0.5);
  }
  if (s.observe) BOOST_TEST(observed == s.steps * (c.n_layer + 1));
  const std::vector<T> grads = model.params().grad_buffer().to_host();
  step.grad_bytes.assign(reinterpret_cast<const char*>(grads.data()),
                         reinterpret_cast<const char*>(grads.data() + grads.size()));
  return step;
}

bool same_loss(const Step& a, const Step& b) {
  return std::memcmp(&a.loss, &b.loss, sizeof(double)) == 0;
}

template <class T>
void check(const char* type) {
  const std::vector<test::Variant> variants = {{"hc", {}},
                                               {"hc", {{"hc_readout", "sum_then_norm"}}},
                                               {"mhc", {}},
                                               {"mhc", {{"mhc_streams", "3"}}}};
  for (const test::Variant& v : variants)
    for (Schedule schedule :
         {Schedule::plain, Schedule::skip_first, Schedule::skip_middle, Schedule::swap}) {
      BOOST_TEST_CONTEXT(v.name() << ", " << type << ", schedule " << int(schedule)) {
        const ModelConfig c = v.small_config(4);
        const Step fused = run<T>(c, {.schedule = schedule});
        const Step own_pass = run<T>(c, {.fused = false, .schedule = schedule});
        BOOST_TEST(same_loss(fused, own_pass));
        for (const Setup& other :
             {Setup{.schedule = schedule, .recompute = Recompute::blocks},
              Setup{.schedule = schedule, .observe = true}, Setup{.schedule = schedule, .steps = 2},
              Setup{.schedule = schedule,
              .recompute = Recompute::blocks,
              .observe = true,
              .steps = 2}}) {
          const Step step = run<T>(c, other);
          BOOST_TEST(same_loss(step, fused));
          BOOST_TEST(step.grad_bytes == fused.grad_bytes);
        }
      }
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(handed_over_rstd_gives_the_bits_of_the_own_pass_in_float) {
  check<float>("float");
}

BOOST_AUTO_TEST_CASE(handed_over_rstd_gives_the_bits_of_the_own_pass_in_double) {
  check<double>("double");
}
