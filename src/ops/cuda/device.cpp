#include "ops/cuda/device.hpp"

#include <cuda_runtime.h>

#include "ops/cuda/cuda_check.hpp"

namespace db::cuda {

int device_count() noexcept {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device / no driver" error
    return 0;
  }
  return count;
}

bool cuda_available() noexcept {
  return device_count() > 0;
}

int node_local_rank(MPI_Comm comm) {
  MPI_Comm local = MPI_COMM_NULL;
  if (MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local) != MPI_SUCCESS)
    fail(__FILE__, __LINE__, "MPI: MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) failed");
  int rank = 0;
  const int code = MPI_Comm_rank(local, &rank);
  MPI_Comm_free(&local);
  if (code != MPI_SUCCESS) fail(__FILE__, __LINE__, "MPI: MPI_Comm_rank failed");
  return rank;
}

int select_device(MPI_Comm comm) {
  const int count = device_count();
  CUDA_REQUIRE(count > 0, "no CUDA GPU is visible to this process");
  const int device = node_local_rank(comm) % count;
  CUDA_CHECK(cudaSetDevice(device));
  return device;
}

std::string device_name(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return prop.name;
}

std::string device_uuid(int device) {
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  return std::string(prop.uuid.bytes, sizeof prop.uuid.bytes);
}

size_t device_memory_used() {
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return total_bytes - free_bytes;
}

size_t device_memory_total() {
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return total_bytes;
}

}  // namespace db::cuda
