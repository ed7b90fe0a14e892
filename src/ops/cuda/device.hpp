// Which GPUs this process sees and which one it uses. Compiled only with the CUDA backend;
// core/backend.hpp is the CPU-safe entry point that decides whether to call into it.
#pragma once
#include <mpi.h>

#include <string>

namespace db::cuda {

// Number of visible GPUs; 0 when there is no driver, no device or any CUDA error (never throws).
int device_count() noexcept;
// True when at least one GPU can be used (never throws).
bool cuda_available() noexcept;

// Rank of this process among the ranks of `comm` that share its node
// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED).
int node_local_rank(MPI_Comm comm);

// Selects GPU (node-local rank mod device count) for this rank and returns its index.
// Throws db::Error when no GPU is visible.
int select_device(MPI_Comm comm);

std::string device_name(int device);
// Bytes in use on the current device (total − free, from cudaMemGetInfo).
size_t device_memory_used();
// Capacity of the current device in bytes.
size_t device_memory_total();

}  // namespace db::cuda
