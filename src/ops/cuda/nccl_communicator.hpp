// NCCL inside one run's MPI communicator (the data parallelism): rank 0 of the MPI
// communicator creates the unique id, MPI_Bcast shares it, every rank joins with
// ncclCommInitRank on the GPU it selected (cuda::select_device). Gradients are summed in fp32
// by default. RAII: the NCCL communicator is destroyed with the object.
#pragma once
#include <mpi.h>
#include <nccl.h>

#include <cstdint>

#include "ops/cuda/types.hpp"

namespace db::cuda {

class NcclCommunicator {
 public:
  // Collective over `comm`; call after the device is selected.
  explicit NcclCommunicator(MPI_Comm comm);
  ~NcclCommunicator();
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  ncclComm_t handle() const { return comm_; }

  // In-place sum over all ranks, enqueued on `stream`.
  void allreduce_sum(float* values, int64_t count, cudaStream_t stream) const;
  void allreduce_sum(double* values, int64_t count, cudaStream_t stream) const;
  // In-place average (sum then ·1/size, in the same NCCL call via ncclAvg).
  void allreduce_mean(float* values, int64_t count, cudaStream_t stream) const;

  // Waits until `stream` has finished, polling NCCL's asynchronous error state instead of
  // blocking in cudaStreamSynchronize: a failed peer or transport (ncclCommGetAsyncError) or
  // `timeout_seconds` without completion aborts the communicator and throws db::Error, so a
  // dead peer cannot make this rank wait for ever.
  void wait(cudaStream_t stream, double timeout_seconds);

 private:
  ncclComm_t comm_ = nullptr;
  int rank_ = 0, size_ = 1;
};

}  // namespace db::cuda
