#include "core/backend.hpp"

#include <cstdio>

#include "core/error.hpp"
#ifdef DEPTHBENCH_HAVE_CUDA
#include "ops/cuda/device.hpp"
#endif

namespace db {
namespace {
int visible_gpus() {
#ifdef DEPTHBENCH_HAVE_CUDA
  return cuda::device_count();
#else
  return 0;
#endif
}
}  // namespace

bool cuda_compiled_in() {
#ifdef DEPTHBENCH_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

const char* backend_name(Backend backend) {
  return backend == Backend::cuda ? "cuda" : "cpu";
}

Backend choose_backend(const std::string& requested) {
  if (requested == "cpu") return Backend::cpu;
  if (requested == "cuda") {
    if (!cuda_compiled_in())
      throw Error(
          "--backend cuda: this depthbench was built without CUDA (configure with "
          "-DDEPTHBENCH_CUDA=ON on a machine with nvcc)");
    if (visible_gpus() == 0)
      throw Error(
          "--backend cuda: no CUDA GPU is visible (check nvidia-smi and "
          "CUDA_VISIBLE_DEVICES)");
    return Backend::cuda;
  }
  if (requested != "auto")
    throw Error("unknown backend '" + requested + "' (valid: auto, cpu, cuda)");
  if (visible_gpus() > 0) return Backend::cuda;
  // Every rank chooses; one line says it (world rank 0, or the only process without MPI).
  int mpi_started = 0, rank = 0;
  MPI_Initialized(&mpi_started);
  if (mpi_started) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0)
    std::printf("backend: no GPU visible%s, using the CPU backend\n",
                cuda_compiled_in() ? "" : " (built without CUDA)");
  return Backend::cpu;
}

Precision parse_precision(const std::string& name) {
  if (name == "fp32") return Precision::fp32;
  if (name == "bf16") return Precision::bf16;
  throw Error("unknown precision '" + name + "' (valid: bf16, fp32)");
}

const char* precision_name(Precision precision) {
  return precision == Precision::bf16 ? "bf16" : "fp32";
}

int select_gpu(MPI_Comm comm) {
#ifdef DEPTHBENCH_HAVE_CUDA
  return cuda::select_device(comm);
#else
  (void)comm;
  throw Error("this build has no CUDA backend");
#endif
}

std::string gpu_name(int device) {
#ifdef DEPTHBENCH_HAVE_CUDA
  return cuda::device_name(device);
#else
  (void)device;
  return "none";
#endif
}

size_t gpu_memory_total_bytes() {
#ifdef DEPTHBENCH_HAVE_CUDA
  return cuda::device_memory_total();
#else
  return 0;
#endif
}

size_t gpu_memory_used_bytes() {
#ifdef DEPTHBENCH_HAVE_CUDA
  return cuda::device_memory_used();
#else
  return 0;
#endif
}

}  // namespace db
