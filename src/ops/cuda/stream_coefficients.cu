#include "ops/cuda/column_sums.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/kernel_util.cuh"
#include "ops/cuda/stream_coefficients.hpp"
#include "ops/rows/stream_rows.hpp"

namespace db::cuda {
namespace {
using detail::grid_for;

constexpr int kThreads = 256;

// tanh in place, then static + s·tanh (one thread per coefficient).
__global__ void hc_coefficients_kernel(float* __restrict__ coefficient, float* __restrict__ t,
                                       const float* __restrict__ static_value,
                                       const float* __restrict__ scale, int64_t count,
                                       int per_token) {
  DB_GRID_STRIDE_LOOP(i, count) {
    t[i] = tanhf(t[i]);
    coefficient[i] = rows::hc_coefficient(static_value[i % per_token], *scale, t[i]);
  }
}

// One thread per token: dza, dzb, and the token's contributions to the parameter sums:
// columns [dstatic_alpha (n(n+1)) | dstatic_beta (n) | ds_alpha | ds_beta].
__global__ void hc_backward_kernel(double* __restrict__ contributions, float* __restrict__ dza,
                                   float* __restrict__ dzb, const float* __restrict__ dalpha,
                                   const float* __restrict__ dbeta, const float* __restrict__ ta,
                                   const float* __restrict__ tb, const float* __restrict__ s_alpha,
                                   const float* __restrict__ s_beta, int64_t rows, int n) {
  const int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  const int na = n * (n + 1), columns = na + n + 2;
  double* out = contributions + r * columns;
  double scale_alpha = 0, scale_beta = 0;
  for (int c = 0; c < na; ++c) {
    const int64_t i = r * na + c;
    out[c] = dalpha[i];
    scale_alpha += double(dalpha[i]) * ta[i];
    dza[i] = rows::hc_coefficient_preactivation_grad(dalpha[i], *s_alpha, ta[i]);
  }
  for (int c = 0; c < n; ++c) {
    const int64_t i = r * n + c;
    out[na + c] = dbeta[i];
    scale_beta += double(dbeta[i]) * tb[i];
    dzb[i] = rows::hc_coefficient_preactivation_grad(dbeta[i], *s_beta, tb[i]);
  }
  out[na + n] = scale_alpha;
  out[na + n + 1] = scale_beta;
}

__global__ void mhc_coefficients_kernel(float* __restrict__ pre, float* __restrict__ post,
                                        float* __restrict__ res_logits, const float* __restrict__ z,
                                        const float* __restrict__ gates,
                                        const float* __restrict__ bias, int64_t rows, int n) {
  const int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  const int nn = n * n;
  rows::mhc_coefficients_row(pre + r * n, post + r * n, res_logits + r * nn, z + r * (nn + 2 * n),
                             gates, bias, n);
}

// One thread per token: dz and the contributions [dbias (n² + 2n) | dgates (3)].
__global__ void mhc_backward_kernel(double* __restrict__ contributions, float* __restrict__ dz,
                                    const float* __restrict__ dpre, const float* __restrict__ dpost,
                                    const float* __restrict__ dres_logits,
                                    const float* __restrict__ z, const float* __restrict__ pre,
                                    const float* __restrict__ post, const float* __restrict__ gates,
                                    int64_t rows, int n) {
  const int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  constexpr int kMaxLogits = kMaxMhcStreams * kMaxMhcStreams + 2 * kMaxMhcStreams;
  const int nn = n * n, m = nn + 2 * n;
  float dl[kMaxLogits];
  rows::mhc_logit_grads_row(dl, dpre + r * n, dpost + r * n, dres_logits + r * nn, pre + r * n,
                            post + r * n, n);
  double* out = contributions + r * (m + 3);
  double dgate[3] = {0, 0, 0};
  for (int c = 0; c < m; ++c) {
    const int gate = rows::mhc_gate_of(c, n);
    out[c] = dl[c];
    dgate[gate] += double(dl[c]) * z[r * m + c];
    dz[r * m + c] = gates[gate] * dl[c];
  }
  for (int k = 0; k < 3; ++k) out[m + k] = dgate[k];
}

unsigned token_blocks(int64_t rows) {
  return unsigned((rows + kThreads - 1) / kThreads);
}

}  // namespace

void hc_coefficients(float* alpha, float* beta, float* ta, float* tb, const float* static_alpha,
                     const float* static_beta, const float* s_alpha, const float* s_beta,
                     int64_t rows, int n, cudaStream_t stream) {
  if (rows <= 0) return;
  const int na = n * (n + 1);
  hc_coefficients_kernel<<<grid_for(rows * na, kThreads), kThreads, 0, stream>>>(
      alpha, ta, static_alpha, s_alpha, rows * na, na);
  CUDA_CHECK_LAUNCH();
  hc_coefficients_kernel<<<grid_for(rows * n, kThreads), kThreads, 0, stream>>>(
      beta, tb, static_beta, s_beta, rows * n, n);
  CUDA_CHECK_LAUNCH();
}

void hc_coefficients_backward(float* dza, float* dzb, float* dstatic_alpha, float* dstatic_beta,
                              float* ds_alpha, float* ds_beta, const float* dalpha,
                              const float* dbeta, const float* ta, const float* tb,
                              const float* s_alpha, const float* s_beta, int64_t rows, int n,
                              cudaStream_t stream) {
  if (rows <= 0) return;
  ColumnTargets targets;
  targets.add(dstatic_alpha, n * (n + 1));
  targets.add(dstatic_beta, n);
  targets.add(ds_alpha, 1);
  targets.add(ds_beta, 1);
  double* contributions = nullptr;
  CUDA_CHECK(
      cudaMallocAsync(&contributions, size_t(rows) * targets.columns() * sizeof(double), stream));
  hc_backward_kernel<<<token_blocks(rows), kThreads, 0, stream>>>(
      contributions, dza, dzb, dalpha, dbeta, ta, tb, s_alpha, s_beta, rows, n);
  CUDA_CHECK_LAUNCH();
  add_column_sums(contributions, rows, targets, stream);
  CUDA_CHECK(cudaFreeAsync(contributions, stream));
}

void mhc_coefficients(float* pre, float* post, float* res_logits, const float* z,
                      const float* gates, const float* bias, int64_t rows, int n,
                      cudaStream_t stream) {
  if (rows <= 0) return;
  mhc_coefficients_kernel<<<token_blocks(rows), kThreads, 0, stream>>>(pre, post, res_logits, z,
                                                                       gates, bias, rows, n);
  CUDA_CHECK_LAUNCH();
}

void mhc_coefficients_backward(float* dz, float* dgates, float* dbias, const float* dpre,
                               const float* dpost, const float* dres_logits, const float* z,
                               const float* pre, const float* post, const float* gates,
                               int64_t rows, int n, cudaStream_t stream) {
  if (rows <= 0) return;
  CUDA_REQUIRE(n >= 1 && n <= kMaxMhcStreams, "mhc_coefficients_backward: at most " +
                                                  std::to_string(kMaxMhcStreams) +
                                                  " streams on the GPU");
  ColumnTargets targets;
  targets.add(dbias, n * n + 2 * n);
  targets.add(dgates, 3);
  double* contributions = nullptr;
  CUDA_CHECK(
      cudaMallocAsync(&contributions, size_t(rows) * targets.columns() * sizeof(double), stream));
  mhc_backward_kernel<<<token_blocks(rows), kThreads, 0, stream>>>(
      contributions, dz, dpre, dpost, dres_logits, z, pre, post, gates, rows, n);
  CUDA_CHECK_LAUNCH();
  add_column_sums(contributions, rows, targets, stream);
  CUDA_CHECK(cudaFreeAsync(contributions, stream));
}

}  // namespace db::cuda
