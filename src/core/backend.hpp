// The compute backend of a run: the CPU ops (src/ops/cpu) or the CUDA ops (src/ops/cuda).
// Safe to call in every build: without the CUDA backend compiled in, "auto" is the CPU.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <string>

namespace db {

enum class Backend { cpu, cuda };

// requested: "auto" (CUDA when a GPU is visible, else the CPU with one line on stdout saying
// so), "cpu" or "cuda" (a db::Error when CUDA was not compiled in or no GPU is visible).
Backend choose_backend(const std::string& requested);
// True when this binary carries the CUDA backend (DEPTHBENCH_HAVE_CUDA).
bool cuda_compiled_in();
const char* backend_name(Backend backend);

// The GPU of this rank: node-local rank modulo the visible GPUs, made current for this process.
// Returns its index (db::Error without a usable GPU).
int select_gpu(MPI_Comm comm);
std::string gpu_name(int device);
// Bytes in use on the current GPU (0 without CUDA).
size_t gpu_memory_used_bytes();

}  // namespace db
