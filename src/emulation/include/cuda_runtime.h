// <cuda_runtime.h> on the emulated device: the toolkit's own header (types, enums, the API's
// signatures, which src/emulation/runtime defines), then the names device code uses
// (threadIdx, __syncthreads, __shfl_xor_sync, ...) from the emulated SIMT model.
#pragma once
#include_next <cuda_runtime.h>

#include "emulation/simt/device_api.hpp"

// nvcc's <cuda_runtime.h> adds this overload for kernels (a function pointer of any type); the
// host compiler's view of the header lacks it.
template <class T>
inline cudaError_t cudaFuncSetAttribute(T* entry, cudaFuncAttribute attr, int value) {
  return ::cudaFuncSetAttribute(reinterpret_cast<const void*>(entry), attr, value);
}
