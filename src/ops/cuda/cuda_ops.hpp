// The CUDA backend of the ops interface (ops/ops.hpp): every op runs on the current GPU
// (memory space cuda) on the default stream, through the kernels of this folder, in fp32;
// GEMMs go through one cuBLASLt handle owned by the ops object — CUBLAS_COMPUTE_32F with TF32
// off for Precision::fp32 (parity), bf16 tensor cores with fp32 accumulation for
// Precision::bf16; attention through the path train.attention picks (attention_paths.hpp).
// The CPU backend (ops/cpu/cpu_ops.cpp) is the reference for every op.
#pragma once
#include <memory>

#include "ops/ops.hpp"
#include "ops/ops_options.hpp"

namespace db::cuda {

// Needs a visible GPU (the cuBLAS handles are created here).
std::unique_ptr<Ops<float>> make_cuda_ops(const OpsOptions& options = {});

}  // namespace db::cuda
