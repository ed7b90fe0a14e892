#include "ops/cuda/nccl_communicator.hpp"

#include "ops/cuda/cuda_check.hpp"

namespace db::cuda {

NcclCommunicator::NcclCommunicator(MPI_Comm comm) {
  if (MPI_Comm_rank(comm, &rank_) != MPI_SUCCESS || MPI_Comm_size(comm, &size_) != MPI_SUCCESS)
    fail(__FILE__, __LINE__, "MPI: cannot query the run communicator");
  ncclUniqueId id{};
  if (rank_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  if (MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm) != MPI_SUCCESS)
    fail(__FILE__, __LINE__, "MPI: broadcasting the NCCL unique id failed");
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

}  // namespace db::cuda
