// How every kernel of the backend is launched, and how it declares dynamic shared memory:
//   launch(kernel, grid, block, shared_bytes, stream, arguments...)
// is `kernel<<<grid, block, shared_bytes, stream>>>(arguments...)` under nvcc, and the emulated
// device's launch in the DEPTHBENCH_CUDA_EMULATION build (doc/cuda.md, "The emulated device"),
// so that the same kernel sources run on the host in every CI.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#if defined(DEPTHBENCH_CUDA_EMULATION)
#include "emulation/runtime/launch.hpp"
#endif

namespace db::cuda {

template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
            cudaStream_t stream, Args&&... args) {
#if defined(DEPTHBENCH_CUDA_EMULATION)
  emulation::launch_kernel(kernel, grid, block, shared_bytes, stream, std::forward<Args>(args)...);
#else
  // clang-format reads .cuh as C++ and would split the chevrons
  // clang-format off
  kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Args>(args)...);
  // clang-format on
#endif
}

}  // namespace db::cuda

// The launch's dynamic shared memory as `T name[]`, 16-byte aligned (`extern __shared__` on the
// GPU; the emulated block's buffer of the launch's size otherwise).
#if defined(DEPTHBENCH_CUDA_EMULATION)
#define DB_DYNAMIC_SHARED(T, name) \
  T* name = static_cast<T*>(::db::emulation::dynamic_shared_memory())
#else
#define DB_DYNAMIC_SHARED(T, name) extern __shared__ __align__(16) T name[]
#endif
