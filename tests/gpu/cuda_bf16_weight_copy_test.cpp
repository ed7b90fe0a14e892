// The bf16 weight copy on the GPU (model/parameters.hpp): the CUDA AdamW kernel writes, in the
// same pass as the fp32 update, __float2bfloat16 of each value it stores, and that must be the
// CPU's rounding (core/bfloat16.hpp) of the fp32 result, bit for bit — ties, NaN, infinities and
// subnormals included — so that a CPU test of the copy covers the GPU's. Then a bf16 CUDA model
// (eager and with train.cuda_graphs = on, where the replayed micro-batches read the copy the
// step rewrote in place): after each AdamW step the store's copy is fresh and equals that
// rounding of the device's fp32 weights, and the captured run trains to the eager run's bits.
// Prints "no GPU: skipped" without a GPU.
#define BOOST_TEST_MODULE cuda_bf16_weight_copy
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "core/bfloat16.hpp"
#include "core/rng.hpp"
#include "gpu/gpu_support.hpp"
#include "model/model.hpp"
#include "ops/cuda/adamw.hpp"
#include "train/adamw.hpp"

using namespace db;
using namespace db::test;

namespace {

// Capture refuses CUDA_LAUNCH_BLOCKING=1's synchronisations (as in cuda_graphs_test).
const bool launch_blocking_off = (unsetenv("CUDA_LAUNCH_BLOCKING"), true);

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Elements whose bf16 copy is not to_bfloat16 of the fp32 value.
int64_t mismatches(const std::vector<float>& values, const std::vector<uint16_t>& copy) {
  int64_t n = 0;
  for (size_t i = 0; i < values.size(); ++i) n += copy[i] != to_bfloat16(values[i]).bits;
  return n;
}

struct Trained {
  std::vector<double> losses;
  std::vector<float> params;
  int64_t stale_after_steps = 0;  // copy elements off the rounding of the weights, all steps
  bool fresh_after_every_step = true;
};

Trained train(CudaGraphs mode) {
  ModelConfig config;
  config.arch = "moda";  // its depth projections read the copy too
  config.n_layer = 3;
  config.d_model = 64;
  config.n_head = 4;
  config.n_kv_head = 2;
  config.vocab_size = 97;
  OpsOptions options;
  options.precision = Precision::bf16;
  options.activation_dtype = ActivationDtype::bf16;
  options.cuda_graphs = mode;
  Model<float> model(config, find_backend("cuda"), options);
  model.initialize(3);
  AdamW<float> optimizer(model.layout(), Recipe{}, model.space());
  Rng rng(29, "bf16-weight-copy");
  Trained out;
  for (int step = 0; step < 3; ++step) {
    model.params().zero_grads();
    for (int micro = 0; micro < 2; ++micro) {
      std::vector<int32_t> tokens(2 * 32);
      for (int32_t& t : tokens) t = int32_t(rng.below(config.vocab_size));
      model.accumulate_forward_backward(tokens.data(), 2, 32, 1.0 / 124);
    }
    out.losses.push_back(model.take_loss_sum());
    optimizer.step(model.params(), 1e-2, 1.0);
    out.fresh_after_every_step = out.fresh_after_every_step && model.params().bf16_copy_fresh();
    const std::vector<bfloat16> copy = model.params().bf16_copy_to_host();
    std::vector<uint16_t> bits(copy.size());
    for (size_t i = 0; i < copy.size(); ++i) bits[i] = copy[i].bits;
    out.stale_after_steps += mismatches(model.params().values_to_host(), bits);
  }
  out.params = model.params().values_to_host();
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(cuda_adamw_bf16_copy_is_the_cpu_rounding_of_its_fp32_result) {
  DB_REQUIRE_GPU();
  const int64_t n = 100000;
  std::vector<float> P = random_floats(n, 31), G = random_floats(n, 32),
                     M = random_floats(n, 33, 0.1), V = random_floats(n, 34, 0.1);
  for (float& v : V) v = v * v;
  std::vector<uint8_t> decay(n);
  for (int64_t i = 0; i < n; ++i) decay[i] = uint8_t(i % 2);
  // Values the update leaves as they are (no gradient, no moments, no decay), chosen where the
  // rounding has cases: ties to even both ways, a NaN with a payload, ±inf, a subnormal, −0, and
  // the largest float below the first value that rounds to inf.
  const std::vector<uint32_t> special = {0x3f808000u, 0x3f818000u, 0x7fc00001u,
                                         0xff800000u, 0x7f800000u, 0x00000123u,
                                         0x80000000u, 0x7f7f7fffu, 0x7f7f8000u};
  for (size_t k = 0; k < special.size(); ++k) {
    P[k] = from_bits(special[k]);
    G[k] = M[k] = V[k] = 0.f;
    decay[k] = 0;
  }
  cuda::DeviceBuffer<float> p, g, m, v;
  p.upload(P);
  g.upload(G);
  m.upload(M);
  v.upload(V);
  cuda::DeviceBuffer<uint8_t> d;
  d.upload(decay);
  cuda::DeviceBuffer<cuda::bf16> copy(n);
  cuda::AdamWStep step;
  step.lr = 1e-2;
  step.step = 2;
  step.clip_scale = 0.5;
  cuda::adamw_step(p.data(), g.data(), m.data(), v.data(), d.data(), n, step, copy.data());
  const std::vector<float> values = p.download();
  const std::vector<cuda::bf16> rounded = copy.download();
  std::vector<uint16_t> bits(n);
  for (int64_t i = 0; i < n; ++i) std::memcpy(&bits[i], &rounded[i], sizeof(uint16_t));
  BOOST_TEST(mismatches(values, bits) == 0);
  for (size_t k = 0; k < special.size(); ++k) {  // the NaN may lose its payload in arithmetic
    uint32_t u;
    std::memcpy(&u, &values[k], sizeof u);
    BOOST_TEST((u == special[k] || (k == 2 && std::isnan(values[k]))),
               "special value " << k << " was changed by the update");
  }
  BOOST_TEST(bits[0] == 0x3f80u);  // the ties went to even
  BOOST_TEST(bits[1] == 0x3f82u);
  BOOST_TEST(bits[2] == 0x7fffu);  // CUDA's canonical NaN
}

BOOST_AUTO_TEST_CASE(a_bf16_cuda_model_reads_a_copy_the_adamw_step_keeps_exact) {
  DB_REQUIRE_GPU();
  BOOST_REQUIRE(launch_blocking_off);
  const Trained eager = train(CudaGraphs::off), captured = train(CudaGraphs::on);
  std::printf("losses %.9g %.9g %.9g\n", eager.losses[0], eager.losses[1], eager.losses[2]);
  for (const Trained* t : {&eager, &captured}) {
    BOOST_TEST(t->fresh_after_every_step);
    BOOST_TEST(t->stale_after_steps == 0);
  }
  BOOST_TEST(captured.losses == eager.losses);
  BOOST_TEST((captured.params == eager.params));
}
