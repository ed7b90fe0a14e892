#include "ops/cuda/add_rmsnorm.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/norm_row.cuh"

namespace db::cuda {
namespace {
using detail::kNormForwardThreads;
using detail::kNormScratch;
using detail::needs_shared_opt_in;
using detail::norm_row_forward;

// One block per row: the sum goes to global memory once and to shared memory, from which
// norm_row_forward reads it (each thread its own columns: no barrier needed before). sum and
// branch may alias, so neither is __restrict__; each element of branch is read before the same
// thread writes it.
template <bool kLayerNorm>
__global__ void add_norm_forward_kernel(float* sum, float* __restrict__ y,
                                        float* __restrict__ mean_out, float* __restrict__ rstd_out,
                                        const float* x, const float* branch, float alpha,
                                        const float* __restrict__ g, int d, float eps) {
  DB_DYNAMIC_SHARED(float, row_sum);  // d floats
  __shared__ float scratch[kNormScratch];
  const int64_t row = blockIdx.x, base = row * d;
  for (int j = threadIdx.x; j < d; j += blockDim.x) {
    // axpby's rounding (elementwise.cu): alpha·x rounded, then the add; with alpha = 1 exactly
    // branch + x. The _rn intrinsics keep the compiler from contracting this into an FMA.
    const float s = __fadd_rn(__fmul_rn(alpha, x[base + j]), branch[base + j]);
    sum[base + j] = s;
    row_sum[j] = s;
  }
  norm_row_forward<float, float, kLayerNorm>(y + base, kLayerNorm ? mean_out + row : nullptr,
                                             rstd_out + row, row_sum, g, d, eps, scratch);
}

// Sandwich-LN's branch norm ahead of the add (ops.hpp, norm_add_rmsnorm_forward): the branch's
// norm goes to the shared row (each thread its own columns), the add replaces it there, the
// norm of the sum reads it. The branch's norm and the add are those of rmsnorm.cu's forward and
// the kernel above, in the same order on the same threads: the bits of the three separate steps.
__global__ void norm_add_rmsnorm_forward_kernel(float* __restrict__ sum, float* __restrict__ y,
                                                float* __restrict__ rstd_out,
                                                float* __restrict__ branch_rstd_out,
                                                const float* __restrict__ x,
                                                const float* __restrict__ branch,
                                                const float* __restrict__ branch_g,
                                                const float* __restrict__ g, int d, float eps) {
  DB_DYNAMIC_SHARED(float, row);  // d floats: the normalised branch, then the sum
  __shared__ float scratch[kNormScratch];
  const int64_t r = blockIdx.x, base = r * d;
  norm_row_forward<float, float, false>(row, nullptr, branch_rstd_out + r, branch + base, branch_g,
                                        d, eps, scratch);
  for (int j = threadIdx.x; j < d; j += blockDim.x) {
    const float s = __fadd_rn(x[base + j], row[j]);
    sum[base + j] = s;
    row[j] = s;
  }
  norm_row_forward<float, float, false>(y + base, nullptr, rstd_out + r, row, g, d, eps, scratch);
}

// Opts a row kernel in to `smem` bytes of dynamic shared memory where it needs more than the
// default.
template <class Kernel>
void allow_row_in_shared(Kernel kernel, size_t smem) {
  if (needs_shared_opt_in(smem))
    CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
}

template <bool kLayerNorm>
void add_norm_forward(float* sum, float* y, float* mean, float* rstd, const float* x,
                      const float* branch, float alpha, const float* g, int64_t N, int d,
                      double eps, cudaStream_t stream) {
  if (N <= 0) return;
  const size_t smem = size_t(d) * sizeof(float);
  allow_row_in_shared(add_norm_forward_kernel<kLayerNorm>, smem);
  launch(add_norm_forward_kernel<kLayerNorm>, unsigned(N), kNormForwardThreads, smem, stream, sum,
         y, mean, rstd, x, branch, alpha, g, d, float(eps));
  CUDA_CHECK_LAUNCH();
}
}  // namespace

void add_rmsnorm_forward(float* sum, float* y, float* rstd, const float* x, const float* branch,
                         float alpha, const float* g, int64_t N, int d, double eps,
                         cudaStream_t stream) {
  add_norm_forward<false>(sum, y, nullptr, rstd, x, branch, alpha, g, N, d, eps, stream);
}

void add_layernorm_forward(float* sum, float* y, float* mean, float* rstd, const float* x,
                           const float* branch, float alpha, const float* g, int64_t N, int d,
                           double eps, cudaStream_t stream) {
  add_norm_forward<true>(sum, y, mean, rstd, x, branch, alpha, g, N, d, eps, stream);
}

void norm_add_rmsnorm_forward(float* sum, float* y, float* rstd, float* branch_rstd, const float* x,
                              const float* branch, const float* branch_g, const float* g, int64_t N,
                              int d, double eps, cudaStream_t stream) {
  if (N <= 0) return;
  const size_t smem = size_t(d) * sizeof(float);
  allow_row_in_shared(norm_add_rmsnorm_forward_kernel, smem);
  launch(norm_add_rmsnorm_forward_kernel, unsigned(N), kNormForwardThreads, smem, stream, sum, y,
         rstd, branch_rstd, x, branch, branch_g, g, d, float(eps));
  CUDA_CHECK_LAUNCH();
}

}  // namespace db::cuda
