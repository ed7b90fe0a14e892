// One check macro per CUDA library (every external call is checked): a failure
// throws db::Error carrying file, line, the failing call and the library's own message.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "core/error.hpp"

namespace db::cuda {
// Header-only twin of db::throw_error (same message format) so that depthbench_cuda does not
// depend back on depthbench_lib at link time.
[[noreturn]] inline void fail(const char* file, int line, const std::string& message) {
  std::string name = file;
  const size_t slash = name.find_last_of('/');
  if (slash != std::string::npos) name = name.substr(slash + 1);
  throw ::db::Error(message + " [" + name + ":" + std::to_string(line) + "]");
}
}  // namespace db::cuda

// Throws db::Error with the message when the condition is false (CUDA-layer DB_REQUIRE).
#define CUDA_REQUIRE(cond, message)                                          \
  do {                                                                       \
    if (!(cond)) ::db::cuda::fail(__FILE__, __LINE__, std::string(message)); \
  } while (0)

#define CUDA_CHECK(call)                                                                       \
  do {                                                                                         \
    cudaError_t cuda_code_ = (call);                                                           \
    if (cuda_code_ != cudaSuccess)                                                             \
      ::db::cuda::fail(__FILE__, __LINE__,                                                     \
                       std::string("CUDA: ") + cudaGetErrorString(cuda_code_) + " in " #call); \
  } while (0)

// cuBLAS and cuBLASLt share cublasStatus_t.
#define CUBLAS_CHECK(call)                                                               \
  do {                                                                                   \
    cublasStatus_t cublas_code_ = (call);                                                \
    if (cublas_code_ != CUBLAS_STATUS_SUCCESS)                                           \
      ::db::cuda::fail(                                                                  \
          __FILE__, __LINE__,                                                            \
          std::string("cuBLAS: ") + cublasGetStatusString(cublas_code_) + " in " #call); \
  } while (0)

#define NCCL_CHECK(call)                                                                       \
  do {                                                                                         \
    ncclResult_t nccl_code_ = (call);                                                          \
    if (nccl_code_ != ncclSuccess)                                                             \
      ::db::cuda::fail(__FILE__, __LINE__,                                                     \
                       std::string("NCCL: ") + ncclGetErrorString(nccl_code_) + " in " #call); \
  } while (0)

// After a kernel launch: reports launch-configuration errors at the launch site.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
