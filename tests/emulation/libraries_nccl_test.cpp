// The emulated NCCL (src/emulation/libraries/nccl_mpi.cpp) on 2 MPI ranks (any number works; the
// checks that need two ranks run from two on): all-reduce sums and
// averages in fp32 and fp64, in place and out of place, equal to the exact sums; the
// communicator joins only with the MPI communicator of its ranks, its own rank and size, and
// one unique id shared by every rank; arguments NCCL refuses are refused; and the backend's own
// NcclCommunicator (sum, mean, its polling wait) over it; the reduction runs in stream order, so
// a missing event wait between a compute stream and the reduction's stream shows.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE libraries_nccl
#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <vector>

#include "emulation/device_array.hpp"
#include "emulation/libraries/nccl_mpi.hpp"
#include "ops/cuda/nccl_communicator.hpp"

using db::test::DeviceArray;

namespace {

struct MpiFixture {
  MpiFixture() { MPI_Init(nullptr, nullptr); }
  ~MpiFixture() { MPI_Finalize(); }
};

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// A communicator over MPI_COMM_WORLD made as NcclCommunicator makes it (id from rank 0).
ncclComm_t make_comm() {
  ncclUniqueId id{};
  if (world_rank() == 0) BOOST_REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  db::emulation::nccl_use_mpi_communicator(MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  BOOST_REQUIRE(ncclCommInitRank(&comm, world_size(), id, world_rank()) == ncclSuccess);
  return comm;
}

// Rank r holds (r + 1)·i + 0.25: small integers and quarters, so every sum is exact.
template <class T>
std::vector<T> rank_values(size_t n, int rank) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = T((rank + 1) * double(i) + 0.25);
  return v;
}
template <class T>
std::vector<T> summed_values(size_t n, int ranks) {
  std::vector<T> v(n, T(0));
  for (int r = 0; r < ranks; ++r) {
    const std::vector<T> x = rank_values<T>(n, r);
    for (size_t i = 0; i < n; ++i) v[i] += x[i];
  }
  return v;
}

}  // namespace

BOOST_TEST_GLOBAL_FIXTURE(MpiFixture);

BOOST_AUTO_TEST_CASE(all_reduce_sums_and_averages_in_place_and_out_of_place) {
  std::printf("%d rank(s)\n", world_size());
  ncclComm_t comm = make_comm();
  cudaStream_t stream = nullptr;
  BOOST_REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  const size_t n = 1000;
  const int rank = world_rank(), ranks = world_size();

  DeviceArray<float> f(rank_values<float>(n, rank));
  BOOST_TEST(ncclAllReduce(f.data, f.data, n, ncclFloat32, ncclSum, comm, stream) == ncclSuccess);
  DeviceArray<double> d(rank_values<double>(n, rank)), d_out(std::vector<double>(n, -1.0));
  BOOST_TEST(ncclAllReduce(d.data, d_out.data, n, ncclFloat64, ncclSum, comm, stream) ==
             ncclSuccess);
  DeviceArray<float> mean(rank_values<float>(n, rank));
  BOOST_TEST(ncclAllReduce(mean.data, mean.data, n, ncclFloat32, ncclAvg, comm, stream) ==
             ncclSuccess);
  DeviceArray<float> mean_src(rank_values<float>(n, rank)), mean_out(std::vector<float>(n, 0.f));
  BOOST_TEST(ncclAllReduce(mean_src.data, mean_out.data, n, ncclFloat32, ncclAvg, comm, stream) ==
             ncclSuccess);
  BOOST_REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  ncclResult_t async = ncclInternalError;
  BOOST_TEST(ncclCommGetAsyncError(comm, &async) == ncclSuccess);
  BOOST_TEST(async == ncclSuccess);

  const std::vector<float> want_f = summed_values<float>(n, ranks);
  const std::vector<double> want_d = summed_values<double>(n, ranks);
  std::vector<float> want_mean(n);
  for (size_t i = 0; i < n; ++i) want_mean[i] = want_f[i] / float(ranks);
  BOOST_TEST(f.to_host() == want_f, boost::test_tools::per_element());
  BOOST_TEST(d_out.to_host() == want_d, boost::test_tools::per_element());
  BOOST_TEST(d.to_host() == rank_values<double>(n, rank), boost::test_tools::per_element());
  BOOST_TEST(mean.to_host() == want_mean, boost::test_tools::per_element());
  BOOST_TEST(mean_out.to_host() == want_mean, boost::test_tools::per_element());
  BOOST_TEST(mean_src.to_host() == rank_values<float>(n, rank), boost::test_tools::per_element());
  cudaStreamDestroy(stream);
  BOOST_TEST(ncclCommDestroy(comm) == ncclSuccess);
}

BOOST_AUTO_TEST_CASE(init_needs_the_mpi_communicator_its_rank_and_one_shared_id) {
  const int rank = world_rank(), ranks = world_size();
  ncclUniqueId id{};
  if (rank == 0) BOOST_REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm = nullptr;
  // No MPI communicator named.
  BOOST_TEST(ncclCommInitRank(&comm, ranks, id, rank) == ncclInvalidUsage);
  // A size other than the MPI communicator's.
  db::emulation::nccl_use_mpi_communicator(MPI_COMM_WORLD);
  BOOST_TEST(ncclCommInitRank(&comm, ranks + 1, id, rank) == ncclInvalidUsage);
  if (ranks >= 2) {
    // The ranks swapped: NCCL rank ≠ MPI rank.
    db::emulation::nccl_use_mpi_communicator(MPI_COMM_WORLD);
    BOOST_TEST(ncclCommInitRank(&comm, ranks, id, (rank + 1) % ranks) == ncclInvalidUsage);
    // Each rank its own id (the broadcast forgotten): refused on every rank.
    ncclUniqueId own{};
    BOOST_REQUIRE(ncclGetUniqueId(&own) == ncclSuccess);
    db::emulation::nccl_use_mpi_communicator(MPI_COMM_WORLD);
    BOOST_TEST(ncclCommInitRank(&comm, ranks, own, rank) == ncclInvalidUsage);
  }
  BOOST_TEST(comm == nullptr);
  // And the consumed communicator is not reused by a later init.
  BOOST_TEST(ncclCommInitRank(&comm, ranks, id, rank) == ncclInvalidUsage);
}

BOOST_AUTO_TEST_CASE(all_reduce_refuses_host_memory_and_types_outside_the_subset) {
  ncclComm_t comm = make_comm();
  std::vector<float> host(8, 1.f);
  BOOST_TEST(ncclAllReduce(host.data(), host.data(), 8, ncclFloat32, ncclSum, comm, nullptr) ==
             ncclInvalidArgument);
  DeviceArray<float> device(host);
  BOOST_TEST(ncclAllReduce(device.data, device.data, 8, ncclInt32, ncclSum, comm, nullptr) ==
             ncclInvalidArgument);
  BOOST_TEST(ncclAllReduce(device.data, device.data, 8, ncclFloat32, ncclMax, comm, nullptr) ==
             ncclInvalidArgument);
  BOOST_TEST(std::string(ncclGetErrorString(ncclInvalidArgument)).find("invalid argument") == 0);
  BOOST_TEST(ncclCommAbort(comm) == ncclSuccess);
}

BOOST_AUTO_TEST_CASE(the_backends_nccl_communicator_sums_and_averages_over_the_emulation) {
  const int rank = world_rank(), ranks = world_size();
  db::cuda::NcclCommunicator comm(MPI_COMM_WORLD);
  BOOST_TEST(comm.rank() == rank);
  BOOST_TEST(comm.size() == ranks);
  cudaStream_t stream = nullptr;
  BOOST_REQUIRE(cudaStreamCreate(&stream) == cudaSuccess);
  const size_t n = 257;
  DeviceArray<float> sum(rank_values<float>(n, rank)), mean(rank_values<float>(n, rank));
  DeviceArray<double> sum64(rank_values<double>(n, rank));
  comm.allreduce_sum(sum.data, int64_t(n), stream);
  comm.allreduce_sum(sum64.data, int64_t(n), stream);
  comm.allreduce_mean(mean.data, int64_t(n), stream);
  comm.wait(stream, 60.0);
  std::vector<float> want_mean = summed_values<float>(n, ranks);
  for (float& x : want_mean) x /= float(ranks);
  BOOST_TEST(sum.to_host() == summed_values<float>(n, ranks), boost::test_tools::per_element());
  BOOST_TEST(sum64.to_host() == summed_values<double>(n, ranks), boost::test_tools::per_element());
  BOOST_TEST(mean.to_host() == want_mean, boost::test_tools::per_element());
  cudaStreamDestroy(stream);
}

BOOST_AUTO_TEST_CASE(all_reduce_runs_in_stream_order_so_a_missing_wait_sums_stale_values) {
  // Each rank's values are cleared on a compute stream; the all-reduce on another stream sums
  // the values before the clear unless it waits for the clear's event (the emulated device runs
  // work that was not waited for late).
  const int rank = world_rank(), ranks = world_size();
  ncclComm_t comm = make_comm();
  cudaStream_t compute = nullptr, reduce = nullptr;
  cudaEvent_t cleared = nullptr;
  BOOST_REQUIRE(cudaStreamCreate(&compute) == cudaSuccess);
  BOOST_REQUIRE(cudaStreamCreate(&reduce) == cudaSuccess);
  BOOST_REQUIRE(cudaEventCreate(&cleared) == cudaSuccess);
  const size_t n = 64;
  DeviceArray<float> source(rank_values<float>(n, rank)), stale(std::vector<float>(n, -1.f));
  DeviceArray<float> waited(rank_values<float>(n, rank));
  BOOST_REQUIRE(cudaMemsetAsync(source.data, 0, n * sizeof(float), compute) == cudaSuccess);
  BOOST_REQUIRE(ncclAllReduce(source.data, stale.data, n, ncclFloat32, ncclSum, comm, reduce) ==
                ncclSuccess);
  BOOST_REQUIRE(cudaStreamSynchronize(reduce) == cudaSuccess);
  BOOST_REQUIRE(cudaMemsetAsync(waited.data, 0, n * sizeof(float), compute) == cudaSuccess);
  BOOST_REQUIRE(cudaEventRecord(cleared, compute) == cudaSuccess);
  BOOST_REQUIRE(cudaStreamWaitEvent(reduce, cleared, 0) == cudaSuccess);
  BOOST_REQUIRE(ncclAllReduce(waited.data, waited.data, n, ncclFloat32, ncclSum, comm, reduce) ==
                ncclSuccess);
  BOOST_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  BOOST_TEST(stale.to_host() == summed_values<float>(n, ranks), boost::test_tools::per_element());
  BOOST_TEST(waited.to_host() == std::vector<float>(n, 0.f), boost::test_tools::per_element());
  cudaEventDestroy(cleared);
  cudaStreamDestroy(compute);
  cudaStreamDestroy(reduce);
  BOOST_TEST(ncclCommDestroy(comm) == ncclSuccess);
}
