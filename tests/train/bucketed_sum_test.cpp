// The MPI gradient sum on real ranks (registered in tests.cmake for 2 and 3 ranks): the rank-
// order sum (ops/rank_order_sum.hpp) gives the same bits in one piece and in buckets of any
// size, equal to ((x_0 + x_1) + x_2) + ... computed here from every rank's data; and a rank
// whose backward fails after its peers started buckets leaves nobody waiting
// (train/gradient_buckets.hpp, the trainer's protocol).
#define BOOST_TEST_MODULE bucketed_sum
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/fault.hpp"
#include "core/rng.hpp"
#include "model/model.hpp"
#include "ops/gradient_reducer.hpp"
#include "ops/rank_order_sum.hpp"
#include "train/gradient_buckets.hpp"
#include "train/mpi_test_main.hpp"

using namespace db;

namespace {

// Rank r's gradients: values of very different magnitudes, so that the order of the additions
// shows in the last bits.
std::vector<float> gradients_of(int rank, int64_t count) {
  Rng rng(100 + rank, "gradients");
  std::vector<float> g(count);
  for (float& x : g) x = float((rng.uniform() - 0.5) * std::pow(10.0, 8 * rng.uniform() - 4));
  return g;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

BOOST_AUTO_TEST_CASE(buckets_of_any_size_sum_to_the_bits_of_the_rank_order_sum) {
  Communicator world = Communicator::world();
  const int64_t n = 20011;  // odd, so slices differ in length
  std::vector<float> want(n, 0.0f);
  for (int r = 0; r < world.size(); ++r) {
    const std::vector<float> g = gradients_of(r, n);
    for (int64_t i = 0; i < n; ++i) want[i] = r == 0 ? g[i] : want[i] + g[i];
  }
  RankOrderSum sums(world);
  std::vector<float> flat = gradients_of(world.rank(), n);
  sums.sum_now(flat.data(), n);
  BOOST_TEST(same_bits(flat, want));
  for (int64_t bucket : {int64_t(1), int64_t(7), int64_t(4096), int64_t(10000)}) {
    std::vector<float> g = gradients_of(world.rank(), n);
    // Out of buffer order, as a plan starts them, with progress between the starts.
    for (int64_t begin = (n - 1) / bucket * bucket; begin >= 0; begin -= bucket) {
      sums.start(g.data() + begin, std::min(bucket, n - begin));
      sums.progress();
    }
    sums.finish();
    BOOST_TEST(same_bits(g, want), "buckets of " << bucket);
  }
}

BOOST_AUTO_TEST_CASE(the_mpi_reducer_sums_started_buckets_like_one_sum) {
  Communicator world = Communicator::world();
  const ModelConfig config = [] {
    ModelConfig c;
    c.arch = "hc";
    c.n_layer = 3;
    c.d_model = 16;
    c.n_head = 2;
    c.vocab_size = 11;
    return c;
  }();
  const ParameterLayout layout = build_layout(config);
  const int64_t n = layout.storage_size();
  auto reducer = make_mpi_gradient_reducer(world, MemorySpace::host);
  BOOST_TEST(reducer->overlaps() == (world.size() > 1));
  Buffer<float> flat(n), bucketed(n);
  flat.upload(gradients_of(world.rank(), n));
  bucketed.upload(gradients_of(world.rank(), n));
  reducer->sum(flat);
  if (world.size() == 1) return;
  BucketedReduction buckets(
      *reducer, bucketed,
      plan_gradient_buckets(layout, std::vector<int>{0, 1, 2}, bucket_elements_of(0.0005)));
  buckets.begin_step();
  buckets.arm();
  for (int p = 3; p >= 0; --p) buckets.gradients_final(p);
  buckets.finish();
  BOOST_TEST(same_bits(flat.to_host(), bucketed.to_host()));
}

// The trainer's protocol with the last rank failing half-way through its backward: it starts
// the remaining buckets, the fault is agreed, every rank waits for its sums. A hang here is the
// failure (CTest's timeout).
BOOST_AUTO_TEST_CASE(a_rank_failing_mid_backward_leaves_no_peer_waiting) {
  Communicator world = Communicator::world();
  const int64_t n = 5000;
  auto reducer = make_mpi_gradient_reducer(world, MemorySpace::host);
  Buffer<float> grads(n);
  grads.upload(gradients_of(world.rank(), n));
  std::vector<GradientBucket> plan;
  for (int p = 4; p >= -1; --p) plan.push_back({(4 - p) * 800, p == -1 ? n - 4000 : 800, p});
  BucketedReduction buckets(*reducer, grads, plan);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the reducer stays usable afterwards
    buckets.begin_step();
    const bool fails = world.rank() == world.size() - 1 && attempt == 0;
    const Fault fault = agree_on_fault(world, capture_fault([&] {
                                         try {
                                           buckets.arm();
                                           for (int p = 4; p >= 0; --p) {
                                             if (fails && p == 2) throw Error("injected");
                                             buckets.gradients_final(p);
                                           }
                                         } catch (...) {
                                           buckets.start_remaining();
                                           throw;
                                         }
                                         buckets.start_remaining();
                                       }));
    BOOST_TEST(bool(fault) == (attempt == 0));  // agreed by every rank
    buckets.finish();
  }
}
