#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/sinkhorn.hpp"
#include "ops/rows/sinkhorn_rows.hpp"

namespace db::cuda {
namespace {

constexpr int kThreads = 128;

// One thread per token; the matrices live in per-thread arrays sized for n (hence the template).
template <int kN>
__global__ void sinkhorn_forward_kernel(float* __restrict__ out, const float* __restrict__ logits,
                                        int64_t N, int iterations, double eps) {
  const int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (t >= N) return;
  double m[kN * kN];
  rows::sinkhorn_forward_row(out + t * kN * kN, logits + t * kN * kN, kN, iterations, eps, m);
}

// No trace fits in a thread: the row function recomputes every iterate from the logits.
template <int kN>
__global__ void sinkhorn_backward_kernel(float* __restrict__ dlogits,
                                         const float* __restrict__ dout,
                                         const float* __restrict__ logits, int64_t N,
                                         int iterations, double eps) {
  const int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (t >= N) return;
  double scratch[3 * kN * kN];
  rows::sinkhorn_backward_row(dlogits + t * kN * kN, dout + t * kN * kN, logits + t * kN * kN, kN,
                              iterations, eps, nullptr, scratch);
}

template <int kN>
void launch(bool backward, float* out, const float* dout, const float* logits, int64_t N,
            int iterations, double eps, cudaStream_t stream) {
  const unsigned blocks = unsigned((N + kThreads - 1) / kThreads);
  if (backward)
    sinkhorn_backward_kernel<kN>
        <<<blocks, kThreads, 0, stream>>>(out, dout, logits, N, iterations, eps);
  else
    sinkhorn_forward_kernel<kN><<<blocks, kThreads, 0, stream>>>(out, logits, N, iterations, eps);
  CUDA_CHECK_LAUNCH();
}

void dispatch(bool backward, float* out, const float* dout, const float* logits, int64_t N, int n,
              int iterations, double eps, cudaStream_t stream) {
  if (N <= 0) return;
  switch (n) {
    case 1:
      return launch<1>(backward, out, dout, logits, N, iterations, eps, stream);
    case 2:
      return launch<2>(backward, out, dout, logits, N, iterations, eps, stream);
    case 3:
      return launch<3>(backward, out, dout, logits, N, iterations, eps, stream);
    case 4:
      return launch<4>(backward, out, dout, logits, N, iterations, eps, stream);
    case 6:
      return launch<6>(backward, out, dout, logits, N, iterations, eps, stream);
    case 8:
      return launch<8>(backward, out, dout, logits, N, iterations, eps, stream);
    default:
      fail(__FILE__, __LINE__, "sinkhorn: n must be 1, 2, 3, 4, 6 or 8");
  }
}
}  // namespace

void sinkhorn_forward(float* out, const float* logits, int64_t N, int n, int iterations, double eps,
                      cudaStream_t stream) {
  dispatch(false, out, nullptr, logits, N, n, iterations, eps, stream);
}

void sinkhorn_backward(float* dlogits, const float* dout, const float* logits, int64_t N, int n,
                       int iterations, double eps, cudaStream_t stream) {
  dispatch(true, dlogits, dout, logits, N, n, iterations, eps, stream);
}

}  // namespace db::cuda
