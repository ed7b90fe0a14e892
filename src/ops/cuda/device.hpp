// Which GPUs this process sees and which one it uses (the CUDA backend, cuda_backend.cpp).
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
// Throws db::Error when no GPU is visible. Collective over `comm`: the CUDA backend calls it
// once at start-up with the job's communicator (Backend::start), never inside a run.
int select_device(MPI_Comm comm);

// The device's 16-byte UUID: the same physical GPU has the same UUID in every process, whatever
// CUDA_VISIBLE_DEVICES renumbers it to (ordinals are per process: under per-rank isolation
// every rank sees its GPU as device 0).
std::string device_uuid(int device);

std::string device_name(int device);
// Bytes in use on the current device (total − free, from cudaMemGetInfo).
size_t device_memory_used();
// Capacity of the current device in bytes.
size_t device_memory_total();

}  // namespace db::cuda
