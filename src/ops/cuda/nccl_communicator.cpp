#include "ops/cuda/nccl_communicator.hpp"

#if defined(DEPTHBENCH_CUDA_EMULATION)
#include "emulation/libraries/nccl_mpi.hpp"
#endif

#include <chrono>
#include <string>
#include <thread>

#include "ops/cuda/cuda_check.hpp"

namespace db::cuda {

NcclCommunicator::NcclCommunicator(MPI_Comm comm) {
  if (MPI_Comm_rank(comm, &rank_) != MPI_SUCCESS || MPI_Comm_size(comm, &size_) != MPI_SUCCESS)
    fail(__FILE__, __LINE__, "MPI: cannot query the run communicator");
  ncclUniqueId id{};
  if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  if (MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm) != MPI_SUCCESS)
    fail(__FILE__, __LINE__, "MPI: broadcasting the NCCL unique id failed");
#if defined(DEPTHBENCH_CUDA_EMULATION)
  emulation::nccl_use_mpi_communicator(comm);  // the emulated NCCL runs over this communicator
#endif
  NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_) ncclCommDestroy(comm_);  // never throws from a destructor
}

void NcclCommunicator::allreduce_sum(float* values, int64_t count, cudaStream_t stream) const {
  if (count > 0)
    NCCL_CHECK(ncclAllReduce(values, values, size_t(count), ncclFloat32, ncclSum, comm_, stream));
}

void NcclCommunicator::allreduce_sum(double* values, int64_t count, cudaStream_t stream) const {
  if (count > 0)
    NCCL_CHECK(ncclAllReduce(values, values, size_t(count), ncclFloat64, ncclSum, comm_, stream));
}

void NcclCommunicator::allreduce_mean(float* values, int64_t count, cudaStream_t stream) const {
  if (count > 0)
    NCCL_CHECK(ncclAllReduce(values, values, size_t(count), ncclFloat32, ncclAvg, comm_, stream));
}

void NcclCommunicator::wait(cudaStream_t stream, double timeout_seconds) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t done = cudaStreamQuery(stream);
    if (done == cudaSuccess) return;
    if (done != cudaErrorNotReady) CUDA_CHECK(done);
    ncclResult_t state = ncclSuccess;
    NCCL_CHECK(ncclCommGetAsyncError(comm_, &state));
    std::string reason;
    if (state != ncclSuccess && state != ncclInProgress)
      reason = std::string("asynchronous error: ") + ncclGetErrorString(state);
    else if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
             timeout_seconds)
      reason = "no completion after " + std::to_string(int(timeout_seconds)) +
               " s (a peer may have died)";
    if (!reason.empty()) {
      ncclCommAbort(comm_);  // frees the communicator and stops its kernels
      comm_ = nullptr;
      fail(__FILE__, __LINE__, "NCCL: all-reduce failed: " + reason);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace db::cuda
