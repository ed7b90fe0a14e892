// Element types of the CUDA backend: float (fp32 parity mode) and bf16 activations
// (training mode). Master weights, gradients, optimizer state, norm statistics and the loss
// are always fp32 (doc/cuda.md "Precision modes").
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace db::cuda {
using bf16 = __nv_bfloat16;
}  // namespace db::cuda
