// The op timing of `depthbench bench --breakdown` (ops/section_timer.hpp, ops/timed_ops.hpp):
// a model built while a timer is attached to the backend computes bit for bit what an untimed
// one computes, times every op call under the op's name while the timer records and nothing
// while it does not; a model built without a timer is not wrapped at all. The designs' kernels
// (the generic launchers) are timed by functor while a LaunchTimerScope lives.
#define BOOST_TEST_MODULE timed ops
#include "ops/timed_ops.hpp"

#include <boost/test/unit_test.hpp>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"
#include "ops/backend.hpp"
#include "ops/launch_timer.hpp"

using namespace db;

namespace {

ModelConfig tiny_config() {
  ModelConfig c;
  c.n_layer = 2;
  c.d_model = 32;
  c.n_head = 4;
  c.vocab_size = 61;
  return c;
}

std::vector<int32_t> tokens(int count, int vocab) {
  Rng rng(7, "timed-ops-test");
  std::vector<int32_t> t(count);
  for (int32_t& x : t) x = int32_t(rng.below(vocab));
  return t;
}

const SectionTimer::Total* find(const std::vector<SectionTimer::Total>& totals,
                                const std::string& section) {
  for (const auto& t : totals)
    if (t.section == section) return &t;
  return nullptr;
}

// A model's loss and gradients after one forward and backward of two sequences of 16 tokens
// from the weights of seed 3.
struct Step {
  double loss = 0;
  std::vector<float> grads;
};
Step step_of(Model<float>& model, const std::vector<int32_t>& batch) {
  model.initialize(3);
  model.params().zero_grads();
  const double loss = model.forward_backward(batch.data(), 2, 16, 1.0);
  return {loss, model.params().grad_buffer().to_host()};
}

// A model built while `timer` is attached to the backend: its ops time themselves in it.
std::unique_ptr<Model<float>> timed_model(Backend& backend, SectionTimer& timer,
                                          const ModelConfig& config,
                                          const OpsOptions& options = {}) {
  backend.attach_section_timer(&timer);
  auto model = std::make_unique<Model<float>>(config, backend, options);
  backend.attach_section_timer(nullptr);
  return model;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_timed_model_computes_what_an_untimed_one_does_and_times_every_op) {
  Backend& cpu = find_backend("cpu");
  const ModelConfig config = tiny_config();
  const std::vector<int32_t> batch = tokens(2 * 16, config.vocab_size);
  Model<float> plain(config, cpu);
  const Step want = step_of(plain, batch);
  std::unique_ptr<SectionTimer> timer = cpu.make_section_timer();
  const Step got = step_of(*timed_model(cpu, *timer, config), batch);

  BOOST_TEST(got.loss == want.loss);  // bit for bit: the wrapper only forwards
  BOOST_TEST(got.grads == want.grads, boost::test_tools::per_element());
  const auto totals = timer->totals();
  // Pre-LN: W_q, W_k, W_v, W_o, W1, W3, W2 per block.
  const auto* forward = find(totals, "linear_forward");
  BOOST_REQUIRE(forward);
  BOOST_TEST(forward->calls == 7 * config.n_layer);
  BOOST_TEST(forward->milliseconds >= 0.0);
  BOOST_TEST(find(totals, "attention_backward"));
  BOOST_TEST(find(totals, "lm_head_cross_entropy_fwd_bwd"));
  BOOST_TEST(!find(totals, "moda_attention_forward"));
  // The sections keep the order they were first seen in: the embedding comes first.
  BOOST_TEST(totals.front().section == "embedding_forward");
}

// train.activation_dtype = bf16: the cores run on the ops' bf16 storage; a timed model must hand
// out timed storage ops (before, it had none and refused to build) that compute what the
// untimed ones do and time the cores' ops under the same names.
BOOST_AUTO_TEST_CASE(a_timed_model_with_bf16_activations_times_the_cores_ops) {
  Backend& cpu = find_backend("cpu");
  const ModelConfig config = tiny_config();
  const std::vector<int32_t> batch = tokens(2 * 16, config.vocab_size);
  OpsOptions bf16;
  bf16.activation_dtype = ActivationDtype::bf16;
  Model<float> plain(config, cpu, bf16);
  const Step want = step_of(plain, batch);
  std::unique_ptr<SectionTimer> timer = cpu.make_section_timer();
  std::unique_ptr<Model<float>> timed = timed_model(cpu, *timer, config, bf16);
  BOOST_TEST(timed->backbone().bf16_storage());
  const Step got = step_of(*timed, batch);

  BOOST_TEST(got.loss == want.loss);
  BOOST_TEST(got.grads == want.grads, boost::test_tools::per_element());
  const auto totals = timer->totals();
  // The seven products per block, the two that write the fp32 stream ("_wide") included.
  const auto* forward = find(totals, "linear_forward");
  BOOST_REQUIRE(forward);
  BOOST_TEST(forward->calls == 7 * config.n_layer);
  BOOST_TEST(find(totals, "attention_backward"));
  BOOST_TEST(find(totals, "swiglu_forward"));
  BOOST_TEST(find(totals, "bf16_narrow"));  // the cores' inputs and weights rounded
}

BOOST_AUTO_TEST_CASE(ops_time_nothing_while_the_timer_does_not_record) {
  Backend& cpu = find_backend("cpu");
  std::unique_ptr<SectionTimer> timer = cpu.make_section_timer();
  std::unique_ptr<Model<float>> timed = timed_model(cpu, *timer, tiny_config());
  Model<float>& model = *timed;
  model.initialize(1);
  const std::vector<int32_t> batch = tokens(16, tiny_config().vocab_size);
  timer->set_recording(false);
  model.forward_loss(batch.data(), 1, 16);
  BOOST_TEST(timer->totals().empty());
  timer->set_recording(true);
  model.forward_loss(batch.data(), 1, 16);
  BOOST_TEST(!timer->totals().empty());
  timer->clear();
  BOOST_TEST(timer->totals().empty());
}

BOOST_AUTO_TEST_CASE(a_model_built_without_a_timer_is_not_wrapped) {
  Backend& cpu = find_backend("cpu");
  std::unique_ptr<SectionTimer> timer = cpu.make_section_timer();
  cpu.attach_section_timer(timer.get());
  cpu.attach_section_timer(nullptr);
  Model<float> model(tiny_config(), cpu);
  model.initialize(1);
  const std::vector<int32_t> batch = tokens(16, tiny_config().vocab_size);
  model.forward_loss(batch.data(), 1, 16);
  BOOST_TEST(timer->totals().empty());
}

// The designs' own kernels (ops/launch_timer.hpp): while a LaunchTimerScope lives, every generic
// launch is timed under its functor's name beside the ops (a nested section would throw: the
// host timer refuses one), and the model computes the same bits; without the scope, none is.
BOOST_AUTO_TEST_CASE(design_kernels_are_timed_by_functor_while_a_launch_scope_lives) {
  Backend& cpu = find_backend("cpu");
  for (const auto& [arch, kernel] :
       {std::pair{"hc", "stream_kernels::MixGrads"},
        std::pair{"attnres_full", "depth_softmax_kernels::GatherBackward"}}) {
    ModelConfig config = tiny_config();
    config.arch = arch;
    const std::vector<int32_t> batch = tokens(2 * 16, config.vocab_size);
    Model<float> plain(config, cpu);
    const Step want = step_of(plain, batch);
    std::unique_ptr<SectionTimer> timer = cpu.make_section_timer();
    std::unique_ptr<Model<float>> timed = timed_model(cpu, *timer, config);
    Step got;
    {
      const LaunchTimerScope scope(*timer);
      got = step_of(*timed, batch);
    }
    BOOST_TEST(got.loss == want.loss, arch);
    BOOST_TEST(got.grads == want.grads, boost::test_tools::per_element());
    const auto* launches = find(timer->totals(), kernel);
    BOOST_REQUIRE_MESSAGE(launches, arch << ": no section " << kernel);
    BOOST_TEST(launches->calls >= config.n_layer, arch);
    BOOST_TEST(find(timer->totals(), "linear_forward"));  // the ops still, in the same timer

    timer->clear();
    step_of(*timed, batch);
    BOOST_TEST(!find(timer->totals(), kernel), arch << ": timed without a scope");
    BOOST_TEST(find(timer->totals(), "linear_forward"));
  }
}

BOOST_AUTO_TEST_CASE(a_launch_section_is_named_after_its_functor) {
  BOOST_TEST(detail::launch_section_name("N2db14stream_kernels8MixGradsIfEE") ==
             "stream_kernels::MixGrads");
  BOOST_TEST(detail::launch_section_name("N2db12_GLOBAL__N_114HcCoefficientsIdEE") ==
             "HcCoefficients");
  BOOST_TEST(detail::launch_section_name("not a mangled name") == "not a mangled name");
  // A functor nested in a template keeps its enclosing class's arguments; nested arguments
  // of the last ones go with them.
  BOOST_TEST(detail::without_last_template_arguments("Outer<float>::Inner<A<B>, 4>") ==
             "Outer<float>::Inner");
  BOOST_TEST(detail::without_last_template_arguments("Plain") == "Plain");
}

BOOST_AUTO_TEST_CASE(host_sections_add_up_per_name_and_do_not_nest) {
  std::unique_ptr<SectionTimer> timer = make_host_section_timer();
  timer->begin("a");
  timer->end();
  timer->begin("b");
  timer->end();
  timer->begin("a");
  BOOST_CHECK_THROW(timer->begin("c"), Error);
  timer->end();
  BOOST_CHECK_THROW(timer->end(), Error);
  const auto totals = timer->totals();
  BOOST_REQUIRE(totals.size() == 2u);
  BOOST_TEST(totals[0].section == "a");
  BOOST_TEST(totals[0].calls == 2);
  BOOST_TEST(totals[1].calls == 1);
}

BOOST_AUTO_TEST_CASE(the_cpu_backend_stages_in_host_memory_and_reports_its_peak) {
  const Backend& cpu = find_backend("cpu");
  BOOST_TEST((cpu.staging_space() == MemorySpace::host));
  BOOST_TEST(cpu.memory_peak_bytes() > 0u);  // the process's peak resident set
}
