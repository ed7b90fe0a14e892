// What only the CUDA backend has: device selection at start-up, NCCL inside an MPI
// communicator and its asynchronous-error wait. The backend's memory, ops, optimizer and
// reducer are checked by the conformance suite (tests/backend, gpu.backend_conformance_cuda);
// the registry by tests/ops/buffer_test.cpp.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE cuda_backend
#include <mpi.h>

#include <boost/test/unit_test.hpp>

#include "core/error.hpp"
#include "gpu/gpu_support.hpp"
#include "ops/backend.hpp"
#include "ops/cuda/device.hpp"
#include "ops/cuda/nccl_communicator.hpp"

using namespace db;
using namespace db::test;

struct MpiFixture {
  MpiFixture() { MPI_Init(nullptr, nullptr); }
  ~MpiFixture() { MPI_Finalize(); }
};
BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);

BOOST_AUTO_TEST_CASE(auto_prefers_cuda_exactly_when_a_gpu_is_visible) {
  Backend& cuda = find_backend("cuda");
  if (cuda::cuda_available()) {
    BOOST_TEST(&choose_backend("auto") == &cuda);
  } else {
    std::printf("no GPU: checking the fallback and the forced-CUDA error\n");
    BOOST_TEST(cuda.unavailable_reason() == "no GPU visible");
    BOOST_TEST(&choose_backend("auto") == &find_backend("cpu"));
    BOOST_CHECK_THROW(choose_backend("cuda"), Error);
  }
}

BOOST_AUTO_TEST_CASE(
    start_up_selects_the_device_by_node_local_rank_and_ranks_tell_gpus_apart_by_uuid) {
  DB_REQUIRE_GPU();
  const Communicator job = Communicator::world();
  start_backends(job);
  const int local = cuda::node_local_rank(MPI_COMM_WORLD);
  int current = -1;
  CUDA_CHECK(cudaGetDevice(&current));
  BOOST_TEST(current == local % cuda::device_count());
  BOOST_TEST(cuda::device_uuid(current).size() == 16u);
  // One rank per GPU: NCCL; ranks sharing a GPU (or one rank): MPI.
  const auto reducer = find_backend("cuda").make_gradient_reducer(job);
  const bool shared = job.size() > cuda::device_count();
  std::printf("  %d rank(s), %d GPU(s): gradient reduction \"%s\"\n", job.size(),
              cuda::device_count(), reducer->name().c_str());
  if (job.size() > 1) BOOST_TEST(reducer->name() == (shared ? "mpi via host copy" : "nccl"));
}

BOOST_AUTO_TEST_CASE(device_is_selected_by_node_local_rank) {
  DB_REQUIRE_GPU();
  const int local = cuda::node_local_rank(MPI_COMM_WORLD);
  const int device = cuda::select_device(MPI_COMM_WORLD);
  BOOST_TEST(device == local % cuda::device_count());
  int current = -1;
  CUDA_CHECK(cudaGetDevice(&current));
  BOOST_TEST(current == device);
  std::printf("  rank %d uses GPU %d: %s\n", local, device, cuda::device_name(device).c_str());
}

BOOST_AUTO_TEST_CASE(nccl_allreduce_sums_over_the_run_communicator) {
  DB_REQUIRE_GPU();
  cuda::select_device(MPI_COMM_WORLD);
  cuda::NcclCommunicator nccl(MPI_COMM_WORLD);
  int world = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  BOOST_TEST(nccl.size() == world);
  const std::vector<float> values = random_floats(1000, 90);
  cuda::DeviceBuffer<float> buffer;
  buffer.upload(values);
  nccl.allreduce_sum(buffer.data(), int64_t(values.size()), nullptr);
  nccl.wait(nullptr, 60);  // polls NCCL's asynchronous errors while it waits
  std::vector<float> expected = values;
  for (float& x : expected) x *= float(world);  // every rank holds the same values
  BOOST_TEST(within("nccl sum", relative_error(buffer.download(), expected), 1e-6));
  nccl.allreduce_mean(buffer.data(), int64_t(values.size()), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  BOOST_TEST(within("nccl mean", relative_error(buffer.download(), expected), 1e-6));
}
