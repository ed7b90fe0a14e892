// The NCCL reducer's bucketed sum (train.reduce_bucket_mb, doc/backends.md "Gradient
// reduction"), on one GPU per rank (tests.cmake runs it on 2 ranks): each bucket's values are
// written by a device copy queued on the compute stream just before the bucket starts, so a
// reduction stream not ordered after the compute stream would sum stale zeros; the result must
// equal one flat sum (bit for bit on 2 GPUs, where x₀ + x₁ = x₁ + x₀) and repeat bit for bit.
// Without a GPU: "no GPU: skipped"; with fewer GPUs than ranks (NCCL needs its own GPU per
// rank) or one rank: skipped with a line.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE nccl_bucketed_sum
#include <mpi.h>

#include <boost/test/unit_test.hpp>
#include <cstring>

#include "gpu/gpu_support.hpp"
#include "model/model.hpp"
#include "ops/backend.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "train/gradient_buckets.hpp"

using namespace db;
using namespace db::test;

struct MpiFixture {
  MpiFixture() { MPI_Init(nullptr, nullptr); }
  ~MpiFixture() { MPI_Finalize(); }
};
BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);

BOOST_AUTO_TEST_CASE(nccl_buckets_started_during_the_backward_sum_like_one_all_reduce) {
  DB_REQUIRE_GPU();
  const Communicator job = Communicator::world();
  start_backends(job);
  Backend& cuda = find_backend("cuda");
  const auto reducer = cuda.make_gradient_reducer(job);
  if (reducer->name() != "nccl") {
    std::printf(
        "%d rank(s), %d GPU(s): reduction \"%s\", NCCL needs one GPU per rank on >= 2 "
        "ranks: skipped\n",
        job.size(), cuda::device_count(), reducer->name().c_str());
    return;
  }
  BOOST_TEST(reducer->overlaps());
  ModelConfig c;
  c.arch = "mhc";
  c.n_layer = 4;
  c.d_model = 64;
  c.n_head = 4;
  c.vocab_size = 97;
  const ParameterLayout layout = build_layout(c);
  const size_t n = size_t(layout.storage_size());
  MemorySpaceScope scope(cuda.space());
  Buffer<float> source(n), flat(n);
  source.upload(random_floats(n, 11 + job.rank(), 1e-3));
  flat = source;
  reducer->sum(flat);
  const std::vector<float> want = flat.to_host();

  const auto plan = plan_gradient_buckets(layout, std::vector<int>{0, 1, 2, 3}, 64);
  std::vector<std::vector<float>> results;
  for (int repeat = 0; repeat < 2; ++repeat) {
    Buffer<float> grads(n);
    grads.zero();
    BucketedReduction buckets(*reducer, grads, plan);
    buckets.begin_step();
    buckets.arm();
    size_t started = 0;
    for (int p = c.n_layer; p >= -1; --p) {
      // The "backward" of position p writes the gradients final there, on the compute stream.
      for (size_t k = started; k < plan.size() && plan[k].final_after >= p; ++k)
        CUDA_CHECK(cudaMemcpyAsync(grads.data() + plan[k].begin, source.data() + plan[k].begin,
                                   plan[k].count * sizeof(float), cudaMemcpyDeviceToDevice,
                                   nullptr));
      while (started < plan.size() && plan[started].final_after >= p) ++started;
      if (p >= 0) buckets.gradients_final(p);
    }
    buckets.finish();
    results.push_back(grads.to_host());
  }
  BOOST_TEST(std::memcmp(results[0].data(), results[1].data(), n * sizeof(float)) == 0);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < n; ++i) {
    worst = std::max(worst, double(std::fabs(results[0][i] - want[i])));
    scale = std::max(scale, double(std::fabs(want[i])));
  }
  std::printf("  %d GPUs, %zu buckets: max |bucketed - flat| %.3e of %.3e\n", job.size(),
              plan.size(), worst, scale);
  if (job.size() == 2)
    BOOST_TEST(std::memcmp(results[0].data(), want.data(), n * sizeof(float)) == 0);
  else
    BOOST_TEST(worst <= 1e-6 * scale);
}
