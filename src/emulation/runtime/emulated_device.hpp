// What the emulated device says it is: an H200's limits and properties (doc/cuda.md, "The
// emulated device"), and the error names and messages CUDA gives.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace db::emulation {

// GPUs per process unless DEPTHBENCH_EMULATED_GPUS says otherwise (0: "no GPU").
constexpr int kDefaultDeviceCount = 4;
constexpr size_t kDeviceMemoryBytes = 150754820096;   // what cudaMemGetInfo reports on an H200
constexpr size_t kDefaultSharedPerBlock = 48 * 1024;  // without the opt-in attribute
constexpr size_t kSharedPerBlockOptin = 232448;       // 227 KiB

int emulated_device_count();
cudaDeviceProp emulated_device_properties(int device);
const char* error_name(cudaError_t error);
const char* error_string(cudaError_t error);

// The kernel's cudaFuncAttributeMaxDynamicSharedMemorySize.
size_t max_dynamic_shared(const void* kernel);

}  // namespace db::emulation
