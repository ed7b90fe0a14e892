#include "emulation/runtime/emulated_device.hpp"

#include <cstdio>
#include <cstring>

namespace db::emulation {

cudaDeviceProp emulated_device_properties(int device) {
  cudaDeviceProp p{};
  std::snprintf(p.name, sizeof p.name, "NVIDIA H200 (emulated)");
  // A UUID per device index, the same in every process (as one node's GPUs are).
  std::memset(p.uuid.bytes, 0, sizeof p.uuid.bytes);
  std::memcpy(p.uuid.bytes, "emulated-gpu-", 13);
  p.uuid.bytes[13] = char('0' + device % 10);
  p.totalGlobalMem = kDeviceMemoryBytes;
  p.sharedMemPerBlock = kDefaultSharedPerBlock;
  p.sharedMemPerBlockOptin = kSharedPerBlockOptin;
  p.sharedMemPerMultiprocessor = 233472;
  p.regsPerBlock = 65536;
  p.regsPerMultiprocessor = 65536;
  p.warpSize = 32;
  p.maxThreadsPerBlock = 1024;
  p.maxThreadsPerMultiProcessor = 2048;
  p.maxThreadsDim[0] = 1024, p.maxThreadsDim[1] = 1024, p.maxThreadsDim[2] = 64;
  p.maxGridSize[0] = 2147483647, p.maxGridSize[1] = 65535, p.maxGridSize[2] = 65535;
  p.major = 9, p.minor = 0;
  p.multiProcessorCount = 132;
  p.l2CacheSize = 50 * 1024 * 1024;
  p.memoryBusWidth = 6144;
  p.pciBusID = device + 1;
  p.concurrentKernels = 1;
  p.unifiedAddressing = 1;
  p.memoryPoolsSupported = 1;
  return p;
}

#define EMU_ERRORS(X)                                                                             \
  X(cudaSuccess, "no error")                                                                      \
  X(cudaErrorInvalidValue, "invalid argument")                                                    \
  X(cudaErrorMemoryAllocation, "out of memory")                                                   \
  X(cudaErrorInvalidConfiguration, "invalid configuration argument")                              \
  X(cudaErrorInvalidDevice, "invalid device ordinal")                                             \
  X(cudaErrorNoDevice, "no CUDA-capable device is detected")                                      \
  X(cudaErrorInvalidResourceHandle, "invalid resource handle")                                    \
  X(cudaErrorNotReady, "device not ready")                                                        \
  X(cudaErrorIllegalAddress, "an illegal memory access was encountered")                          \
  X(cudaErrorLaunchFailure, "unspecified launch failure")                                         \
  X(cudaErrorLaunchOutOfResources, "too many resources requested for launch")                     \
  X(cudaErrorIllegalState, "the operation is not permitted in the current state")                 \
  X(cudaErrorStreamCaptureUnsupported, "operation not permitted when stream is capturing")        \
  X(cudaErrorStreamCaptureInvalidated, "operation failed due to a previous error during capture") \
  X(cudaErrorStreamCaptureImplicit,                                                               \
    "operation would make the legacy stream depend on a capturing blocking stream")               \
  X(cudaErrorNotSupported, "operation not supported")

const char* error_name(cudaError_t error) {
#define EMU_NAME(code, text) \
  if (error == code) return #code;
  EMU_ERRORS(EMU_NAME)
#undef EMU_NAME
  return "cudaErrorUnknown";
}

const char* error_string(cudaError_t error) {
#define EMU_TEXT(code, text) \
  if (error == code) return text;
  EMU_ERRORS(EMU_TEXT)
#undef EMU_TEXT
  return "unknown error";
}

}  // namespace db::emulation
