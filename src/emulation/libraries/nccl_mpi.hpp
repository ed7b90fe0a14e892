// NCCL over MPI (emulation only): the collectives of an emulated NCCL communicator run, at
// stream time, as MPI collectives over a duplicate of the MPI communicator of its ranks.
// ncclGetUniqueId, ncclCommInitRank, ncclCommDestroy, ncclCommAbort, ncclAllReduce,
// ncclCommGetAsyncError and ncclGetErrorString are defined in nccl_mpi.cpp with the
// signatures of the real nccl.h.
#pragma once
#include <mpi.h>

namespace db::emulation {

// The MPI communicator whose ranks the next ncclCommInitRank of this process joins (the
// emulated communicator duplicates it; its rank and size must match ncclCommInitRank's). Call
// it just before each ncclCommInitRank: that call consumes it, and fails with
// ncclInvalidUsage when none was given.
void nccl_use_mpi_communicator(MPI_Comm comm);

}  // namespace db::emulation
