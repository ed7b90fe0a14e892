// The compute backend of a run: the CPU ops (src/ops/cpu) or the CUDA ops (src/ops/cuda).
// Safe to call in every build: without the CUDA backend compiled in, "auto" is the CPU.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <string>

namespace db {

enum class Backend { cpu, cuda };

// The arithmetic of the CUDA backend (train.precision): bf16 runs the matrix products on bf16
// tensor cores (inputs rounded to bf16, fp32 accumulation; weights, activations, gradients and
// optimizer state stay fp32); fp32 keeps every product in fp32 (parity runs). The CPU backend
// always computes in fp32 (or double in the gradient checks).
enum class Precision { fp32, bf16 };
Precision parse_precision(const std::string& name);  // "fp32" | "bf16", else db::Error
const char* precision_name(Precision precision);

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
// Bytes in use on, and the capacity of, the current GPU (0 without CUDA).
size_t gpu_memory_used_bytes();
size_t gpu_memory_total_bytes();

}  // namespace db
