// Backend choice, device selection and NCCL inside an MPI communicator. The backend-choice
// cases run everywhere (they are what a machine without a GPU must get right); the device and
// NCCL cases need a GPU.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE cuda_backend
#include <mpi.h>

#include <boost/test/unit_test.hpp>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "gpu/gpu_support.hpp"
#include "ops/cuda/device.hpp"
#include "ops/cuda/nccl_communicator.hpp"

using namespace db;
using namespace db::test;

struct MpiFixture {
  MpiFixture() { MPI_Init(nullptr, nullptr); }
  ~MpiFixture() { MPI_Finalize(); }
};
BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);

BOOST_AUTO_TEST_CASE(backend_cpu_is_always_available_and_unknown_names_are_rejected) {
  BOOST_TEST(cuda_compiled_in());
  BOOST_TEST((choose_backend("cpu") == Backend::cpu));
  BOOST_CHECK_THROW(choose_backend("tpu"), Error);
}

BOOST_AUTO_TEST_CASE(backend_auto_and_forced_cuda_follow_the_visible_gpus) {
  if (cuda::cuda_available()) {
    BOOST_TEST((choose_backend("auto") == Backend::cuda));
    BOOST_TEST((choose_backend("cuda") == Backend::cuda));
  } else {
    std::printf("no GPU: checking the fallback and the forced-CUDA error\n");
    BOOST_TEST((choose_backend("auto") == Backend::cpu));
    BOOST_CHECK_THROW(choose_backend("cuda"), Error);
  }
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
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> expected = values;
  for (float& x : expected) x *= float(world);  // every rank holds the same values
  BOOST_TEST(within("nccl sum", relative_error(buffer.download(), expected), 1e-6));
  nccl.allreduce_mean(buffer.data(), int64_t(values.size()), nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  BOOST_TEST(within("nccl mean", relative_error(buffer.download(), expected), 1e-6));
}
