// The op timing of `depthbench bench --breakdown` (ops/section_timer.hpp, ops/timed_ops.hpp):
// a model built while a timer is attached to the backend computes bit for bit what an untimed
// one computes, times every op call under the op's name while the timer records and nothing
// while it does not; a model built without a timer is not wrapped at all.
#define BOOST_TEST_MODULE timed ops
#include "ops/timed_ops.hpp"

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"
#include "ops/backend.hpp"

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

}  // namespace

BOOST_AUTO_TEST_CASE(a_timed_model_computes_what_an_untimed_one_does_and_times_every_op) {
  Backend& cpu = find_backend("cpu");
  const ModelConfig config = tiny_config();
  const std::vector<int32_t> batch = tokens(2 * 16, config.vocab_size);

  Model<float> plain(config, cpu);
  plain.initialize(3);
  plain.params().zero_grads();
  const double plain_loss = plain.forward_backward(batch.data(), 2, 16, 1.0);

  std::unique_ptr<SectionTimer> timer = cpu.make_section_timer();
  cpu.attach_section_timer(timer.get());
  Model<float> timed(config, cpu);
  cpu.attach_section_timer(nullptr);
  timed.initialize(3);
  timed.params().zero_grads();
  const double timed_loss = timed.forward_backward(batch.data(), 2, 16, 1.0);

  BOOST_TEST(timed_loss == plain_loss);  // bit for bit: the wrapper only forwards
  BOOST_TEST(timed.params().grad_buffer().to_host() == plain.params().grad_buffer().to_host(),
             boost::test_tools::per_element());
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
  plain.initialize(3);
  plain.params().zero_grads();
  const double plain_loss = plain.forward_backward(batch.data(), 2, 16, 1.0);

  std::unique_ptr<SectionTimer> timer = cpu.make_section_timer();
  cpu.attach_section_timer(timer.get());
  Model<float> timed(config, cpu, bf16);
  cpu.attach_section_timer(nullptr);
  BOOST_TEST(timed.backbone().bf16_storage());
  timed.initialize(3);
  timed.params().zero_grads();
  const double timed_loss = timed.forward_backward(batch.data(), 2, 16, 1.0);

  BOOST_TEST(timed_loss == plain_loss);
  BOOST_TEST(timed.params().grad_buffer().to_host() == plain.params().grad_buffer().to_host(),
             boost::test_tools::per_element());
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
  cpu.attach_section_timer(timer.get());
  Model<float> model(tiny_config(), cpu);
  cpu.attach_section_timer(nullptr);
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
