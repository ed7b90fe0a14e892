// What `depthbench bench` and the trainer ask of the CUDA backend beyond the ops (issue 22,
// lever 4 and the speed table): token batches staged in page-locked host memory, the pool's
// peak-memory mark and its reset, and the CUDA-event op timer — a model built with it times
// every op on the device and computes exactly what an untimed one does.
#define BOOST_TEST_MODULE cuda_bench_support
#include <cuda_runtime.h>

#include <boost/test/unit_test.hpp>
#include <vector>

#include "core/buffer.hpp"
#include "core/rng.hpp"
#include "gpu/gpu_support.hpp"
#include "model/model.hpp"
#include "ops/backend.hpp"
#include "ops/cuda/cuda_check.hpp"

using namespace db;
using namespace db::test;

BOOST_AUTO_TEST_CASE(token_batches_are_staged_in_page_locked_host_memory) {
  DB_REQUIRE_GPU();
  const Backend& cuda = find_backend("cuda");
  const MemorySpace staging = cuda.staging_space();
  BOOST_TEST(staging.is_host());
  BOOST_TEST((staging != MemorySpace::host));
  Buffer<int32_t> tokens;
  {
    MemorySpaceScope scope(staging);
    tokens.resize(4096);
  }
  cudaPointerAttributes attributes{};
  CUDA_CHECK(cudaPointerGetAttributes(&attributes, tokens.data()));
  BOOST_TEST(attributes.type == cudaMemoryTypeHost);  // registered with the driver: pinned
  for (size_t i = 0; i < tokens.size(); ++i) tokens.data()[i] = int32_t(i * 7);
  Buffer<int32_t> on_device;
  {
    MemorySpaceScope scope(cuda.space());
    on_device.assign(tokens.data(), tokens.size(), MemorySpace::host);
  }
  const std::vector<int32_t> back = on_device.to_host();
  BOOST_TEST(back[4095] == 4095 * 7);
}

BOOST_AUTO_TEST_CASE(the_peak_memory_mark_follows_the_pool_and_resets) {
  DB_REQUIRE_GPU();
  Backend& cuda = find_backend("cuda");
  cuda.make_float_ops({Precision::fp32});  // configures the pool of the current device
  cuda.reset_memory_peak();
  const size_t before = cuda.memory_peak_bytes();
  constexpr size_t kBytes = size_t(256) << 20;
  {
    MemorySpaceScope scope(cuda.space());
    Buffer<char> block(kBytes);
    cuda.synchronize();
    BOOST_TEST(cuda.memory_peak_bytes() >= before + kBytes);
  }
  cuda.synchronize();
  cuda.reset_memory_peak();
  BOOST_TEST(cuda.memory_peak_bytes() < before + kBytes);  // the block was given back
}

BOOST_AUTO_TEST_CASE(cuda_events_time_every_op_of_a_model_that_computes_as_an_untimed_one) {
  DB_REQUIRE_GPU();
  Backend& cuda = find_backend("cuda");
  ModelConfig config;
  config.n_layer = 2;
  config.d_model = 64;
  config.n_head = 4;
  config.vocab_size = 97;
  std::vector<int32_t> tokens(2 * 32);
  Rng rng(5, "cuda-bench-support");
  for (int32_t& t : tokens) t = int32_t(rng.below(config.vocab_size));

  Model<float> plain(config, cuda, {Precision::fp32});
  plain.initialize(9);
  plain.params().zero_grads();
  const double plain_loss = plain.forward_backward(tokens.data(), 2, 32, 1.0);

  std::unique_ptr<SectionTimer> timer = cuda.make_section_timer();
  cuda.attach_section_timer(timer.get());
  Model<float> timed(config, cuda, {Precision::fp32});
  cuda.attach_section_timer(nullptr);
  timed.initialize(9);
  timed.params().zero_grads();
  const double timed_loss = timed.forward_backward(tokens.data(), 2, 32, 1.0);

  BOOST_TEST(timed_loss == plain_loss);
  BOOST_TEST(timed.params().grad_buffer().to_host() == plain.params().grad_buffer().to_host(),
             boost::test_tools::per_element());
  const auto totals = timer->totals();
  bool saw_linear = false;
  for (const auto& t : totals) {
    BOOST_TEST(t.milliseconds >= 0.0);
    if (t.section == "linear_forward") {
      saw_linear = true;
      BOOST_TEST(t.calls == 7 * config.n_layer);
      BOOST_TEST(t.milliseconds > 0.0);  // kernels ran between the events
    }
  }
  BOOST_TEST(saw_linear);
  std::printf("  %zu op sections timed with CUDA events\n", totals.size());
}

// What `depthbench bench --breakdown` builds on a GPU by default (bf16, activation_dtype auto =
// bf16): the cores run on the ops' bf16 storage, which a timed model must hand out timed (before,
// it had none and the model refused to build), computing what the untimed storage computes.
BOOST_AUTO_TEST_CASE(cuda_events_time_the_cores_ops_on_bf16_activations) {
  DB_REQUIRE_GPU();
  Backend& cuda = find_backend("cuda");
  ModelConfig config;
  config.n_layer = 2;
  config.d_model = 64;
  config.n_head = 4;
  config.vocab_size = 97;
  std::vector<int32_t> tokens(2 * 32);
  Rng rng(6, "cuda-bench-support");
  for (int32_t& t : tokens) t = int32_t(rng.below(config.vocab_size));
  const OpsOptions options{Precision::bf16, AttentionPath::automatic, CudaGraphs::off,
                           ActivationDtype::bf16};

  Model<float> plain(config, cuda, options);
  plain.initialize(9);
  plain.params().zero_grads();
  const double plain_loss = plain.forward_backward(tokens.data(), 2, 32, 1.0);

  std::unique_ptr<SectionTimer> timer = cuda.make_section_timer();
  cuda.attach_section_timer(timer.get());
  Model<float> timed(config, cuda, options);
  cuda.attach_section_timer(nullptr);
  BOOST_TEST(timed.backbone().bf16_storage());
  timed.initialize(9);
  timed.params().zero_grads();
  const double timed_loss = timed.forward_backward(tokens.data(), 2, 32, 1.0);

  BOOST_TEST(timed_loss == plain_loss);
  BOOST_TEST(timed.params().grad_buffer().to_host() == plain.params().grad_buffer().to_host(),
             boost::test_tools::per_element());
  int64_t linear_calls = 0, narrow_calls = 0;
  for (const auto& t : timer->totals()) {
    if (t.section == "linear_forward") linear_calls = t.calls;
    if (t.section == "bf16_narrow") narrow_calls = t.calls;
  }
  BOOST_TEST(linear_calls == 7 * config.n_layer);
  BOOST_TEST(narrow_calls > 0);
}
