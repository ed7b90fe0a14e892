// The CUDA backend of the ops interface (ops/ops.hpp) in fp32 parity mode: every op runs on
// the current GPU (memory space cuda) on the default stream, through the kernels of this
// folder; GEMMs go through one cuBLASLt handle owned by the ops object (CUBLAS_COMPUTE_32F,
// TF32 off). The CPU backend (ops/cpu/cpu_ops.cpp) is the reference for every op.
#pragma once
#include <memory>

#include "ops/ops.hpp"

namespace db::cuda {

// Needs a visible GPU (the cuBLAS handles are created here).
std::unique_ptr<Ops<float>> make_cuda_ops();

}  // namespace db::cuda
