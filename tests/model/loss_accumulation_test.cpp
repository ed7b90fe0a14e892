// The loss of a step summed in the backend's memory and read once (doc/cuda.md, "Host
// overhead"): Model::accumulate_forward_backward adds each micro-batch's loss into one
// accumulator that take_loss_sum reads and resets. On the CPU the sum must be bit for bit the
// host sum of the micro-batches' losses read one by one (what the trainer did before), and the
// gradients those of the same micro-batches; the targets, now derived from the tokens in the
// backend's memory, must give the losses of before.
#define BOOST_TEST_MODULE loss_accumulation
#include <boost/test/unit_test.hpp>
#include <vector>

#include "core/buffer.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"

using namespace db;

namespace {
constexpr int kSeq = 12, kMicro = 3, kMicroBatches = 4;

ModelConfig small_config(const std::string& arch) {
  ModelConfig c;
  c.arch = arch;
  c.n_layer = 3;
  c.d_model = 32;
  c.n_head = 4;
  c.vocab_size = 29;
  return c;
}

std::vector<int32_t> random_tokens(size_t n, int vocab, uint64_t seed) {
  Rng rng(seed, "loss-accumulation");
  std::vector<int32_t> tokens(n);
  for (int32_t& t : tokens) t = int32_t(rng.below(vocab));
  return tokens;
}
}  // namespace

BOOST_AUTO_TEST_CASE(accumulated_loss_is_the_host_sum_of_micro_batch_losses_bit_for_bit) {
  for (const char* arch : {"pre_ln", "hc"}) {
    const ModelConfig config = small_config(arch);
    const std::vector<int32_t> tokens =
        random_tokens(size_t(kMicroBatches) * kMicro * kSeq, config.vocab_size, 3);
    const double scale = 1.0 / (kMicroBatches * kMicro * (kSeq - 1));
    Model<float> per_micro_batch(config), accumulated(config);
    per_micro_batch.initialize(7);
    accumulated.initialize(7);
    per_micro_batch.params().zero_grads();
    accumulated.params().zero_grads();
    double host_sum = 0;
    for (int m = 0; m < kMicroBatches; ++m) {
      const int32_t* batch = tokens.data() + m * kMicro * kSeq;
      host_sum += per_micro_batch.forward_backward(batch, kMicro, kSeq, scale);
      accumulated.accumulate_forward_backward(batch, kMicro, kSeq, scale);
    }
    const double device_sum = accumulated.take_loss_sum();
    BOOST_TEST_MESSAGE(arch << ": loss sum " << device_sum);
    BOOST_TEST(device_sum == host_sum);
    BOOST_TEST(device_sum > 0.0);
    BOOST_TEST(accumulated.take_loss_sum() == 0.0);  // read once, then reset
    const auto a = per_micro_batch.params().grads(), b = accumulated.params().grads();
    BOOST_TEST(std::vector<float>(a.begin(), a.end()) == std::vector<float>(b.begin(), b.end()));
  }
}

BOOST_AUTO_TEST_CASE(targets_from_the_device_tokens_give_the_losses_of_each_position) {
  const ModelConfig config = small_config("pre_ln");
  const std::vector<int32_t> tokens = random_tokens(2 * kSeq, config.vocab_size, 5);
  Model<float> model(config);
  model.initialize(11);
  const double loss = model.forward_loss(tokens.data(), 2, kSeq);
  std::vector<double> rows;
  model.last_position_losses(rows);
  BOOST_REQUIRE(rows.size() == size_t(2 * kSeq));
  BOOST_TEST(rows[kSeq - 1] == 0.0);  // the last position of each window predicts nothing
  BOOST_TEST(rows[2 * kSeq - 1] == 0.0);
  double sum = 0;
  for (double r : rows) {
    BOOST_TEST(r >= 0.0);
    sum += r;
  }
  BOOST_TEST(std::abs(sum - loss) <= 1e-9 * loss);
  // The same tokens through the training entry point: the same loss, to the bit.
  model.params().zero_grads();
  BOOST_TEST(model.forward_backward(tokens.data(), 2, kSeq, 1.0) == loss);
}

BOOST_AUTO_TEST_CASE(a_buffer_keeps_its_block_when_it_shrinks_and_grows_back) {
  // A recorded micro-batch holds the addresses of the model's buffers: a shorter micro-batch or
  // an evaluation in between must not move them.
  Buffer<float> b(100);
  const float* block = b.data();
  b.resize(10);
  BOOST_TEST(b.size() == 10u);
  BOOST_TEST(b.data() == block);
  b.resize(100);
  BOOST_TEST(b.data() == block);
  b.assign_zeros(50);
  BOOST_TEST(b.to_host() == std::vector<float>(50, 0.f));
  b.resize(101);  // beyond the capacity: a new block of the new size
  BOOST_TEST(b.size() == 101u);
  Buffer<float> copy = b;
  BOOST_TEST(copy.size() == 101u);
}
