// cuDNN 9's entry points, loaded when first asked for (dlopen) instead of linked: the program
// then starts on a node without cuDNN, and `train.attention = auto` falls back to the next path
// there, while `cudnn` fails with the loader's reason. Only the CUDA folder includes this, and
// only when CMake found the cuDNN headers (DEPTHBENCH_HAVE_CUDNN).
#pragma once
#include <cudnn_graph.h>

#include <string>

#include "ops/cuda/cuda_check.hpp"

namespace db::cuda {

struct CudnnLibrary {
  decltype(&::cudnnGetVersion) GetVersion;
  decltype(&::cudnnGetErrorString) GetErrorString;
  decltype(&::cudnnGetLastErrorString) GetLastErrorString;
  decltype(&::cudnnCreate) Create;
  decltype(&::cudnnDestroy) Destroy;
  decltype(&::cudnnSetStream) SetStream;
  decltype(&::cudnnBackendCreateDescriptor) BackendCreateDescriptor;
  decltype(&::cudnnBackendDestroyDescriptor) BackendDestroyDescriptor;
  decltype(&::cudnnBackendSetAttribute) BackendSetAttribute;
  decltype(&::cudnnBackendGetAttribute) BackendGetAttribute;
  decltype(&::cudnnBackendFinalize) BackendFinalize;
  decltype(&::cudnnBackendExecute) BackendExecute;
  std::string path;  // the file it came from, for the notes
};

// The process's one copy, or nullptr with `why` set (no library, a symbol missing, major
// version other than 9). Thread-safe; tried once.
const CudnnLibrary* cudnn_library(std::string* why = nullptr);

// "cuDNN: <status> (<cuDNN's last error message>) in <call>", for CUDNN_CHECK.
std::string cudnn_error_message(const CudnnLibrary& lib, cudnnStatus_t status, const char* call);

}  // namespace db::cuda

// Every cuDNN call goes through a library object `lib` (a CudnnLibrary&) in scope.
#define CUDNN_CHECK(call)                                                         \
  do {                                                                            \
    cudnnStatus_t cudnn_code_ = (call);                                           \
    if (cudnn_code_ != CUDNN_STATUS_SUCCESS)                                      \
      ::db::cuda::fail(__FILE__, __LINE__,                                        \
                       ::db::cuda::cudnn_error_message(lib, cudnn_code_, #call)); \
  } while (0)
