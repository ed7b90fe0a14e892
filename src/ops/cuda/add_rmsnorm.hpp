// The residual add and the norm after it in one kernel (ops.hpp, add_rmsnorm_forward): per row,
// sum = alpha·x + branch is written once and kept in shared memory, where the norm reads it.
// fp32 (the residual stream's type). The same bits as elementwise.cu's axpby followed by
// rmsnorm.cu's forward: the sum rounds as axpby does and the row goes through the same code
// (norm_row.cuh) with the same block size.
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"

namespace db::cuda {

// sum may be branch (the add in place); g may be null (gain 1).
void add_rmsnorm_forward(float* sum, float* y, float* rstd, const float* x, const float* branch,
                         float alpha, const float* g, int64_t N, int d, double eps,
                         cudaStream_t stream = nullptr);
void add_layernorm_forward(float* sum, float* y, float* mean, float* rstd, const float* x,
                           const float* branch, float alpha, const float* g, int64_t N, int d,
                           double eps, cudaStream_t stream = nullptr);
// Sandwich-LN's branch norm, the add and the next norm (ops.hpp, norm_add_rmsnorm_forward):
// sum = x + RMSNorm(branch; branch_g), y = RMSNorm(sum; g); the normalised branch stays in
// shared memory. The bits of rmsnorm_forward, then add_rmsnorm_forward with alpha = 1.
void norm_add_rmsnorm_forward(float* sum, float* y, float* rstd, float* branch_rstd,
                              const float* x, const float* branch, const float* branch_g,
                              const float* g, int64_t N, int d, double eps,
                              cudaStream_t stream = nullptr);

}  // namespace db::cuda
