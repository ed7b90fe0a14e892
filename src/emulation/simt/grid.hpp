// Runs a kernel's grid on the host: blocks one after another, the threads of a block as
// cooperative fibers (a thread runs until it reaches a barrier or a warp collective, then the
// next runs), with threadIdx/blockIdx/blockDim/gridDim set for each.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <functional>

namespace db::emulation {

struct LaunchShape {
  dim3 grid, block;
  size_t dynamic_shared_bytes = 0;
  // The kernel's cudaFuncAttributeMaxDynamicSharedMemorySize (48 KiB unless raised; a device
  // allows up to 227 KiB per block opted in).
  size_t max_dynamic_shared_bytes = 48 * 1024;
  const char* kernel_name = "kernel";
};

// What CUDA returns for this configuration at launch: cudaSuccess, or
// cudaErrorInvalidConfiguration (block > 1024 threads or its dims over 1024/1024/64, grid dims
// over 2^31-1/65535/65535, a zero dimension), or cudaErrorInvalidValue-like errors for dynamic
// shared memory over the kernel's limit.
cudaError_t check_launch(const LaunchShape& shape);

// Runs every thread of the grid: thread_body() once per thread, with the thread's indices set.
// Throws DeviceFault (simt/fault.hpp) with a message naming the kernel, block and thread on a
// hazard or a fault; an exception thrown by the body is rethrown as a DeviceFault too.
void run_grid(const LaunchShape& shape, const std::function<void()>& thread_body);

}  // namespace db::emulation
