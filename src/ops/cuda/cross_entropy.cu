#include <algorithm>
#include <type_traits>
#include <vector>

#include "ops/cuda/cross_entropy.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "ops/cuda/elementwise.hpp"
#include "ops/cuda/kernel_util.cuh"

namespace db::cuda {
namespace {
using detail::block_max;
using detail::block_sum;
using detail::from_float;
using detail::to_float;

constexpr int64_t kChunkRows = 4096;
constexpr int kThreads = 512;

// One block per row: online max/sum over the vocabulary, loss = lse − logit[target]; with
// dlogits != null writes (softmax − onehot)·scale (dlogits may alias logits when L = D: every
// element is read and then written by the same thread). L and D, the types of the logits and of
// dlogits, are float or bf16; the max, the sums, the softmax and the loss are fp32 either way.
template <class L, class D>
__global__ void softmax_xent_kernel(float* __restrict__ row_loss, D* dlogits, const L* logits,
                                    const int32_t* __restrict__ targets, int vocab,
                                    float grad_scale) {
  __shared__ float scratch[32];
  const int64_t row = blockIdx.x;
  const int32_t target = targets[row];
  const L* x = logits + row * vocab;
  D* dx = dlogits ? dlogits + row * vocab : nullptr;
  if (target < 0) {  // uniform across the block: no barrier is skipped by part of it
    if (threadIdx.x == 0) row_loss[row] = 0.f;
    if (dx)
      for (int v = threadIdx.x; v < vocab; v += blockDim.x) dx[v] = from_float<D>(0.f);
    return;
  }
  // Read before the barriers of block_max/block_sum: where dx aliases x, after the last barrier
  // thread (target % blockDim.x) overwrites x[target] with its gradient.
  const float target_logit = to_float(x[target]);
  float m = -INFINITY, s = 0.f;
  for (int v = threadIdx.x; v < vocab; v += blockDim.x) {
    const float xv = to_float(x[v]);
    if (xv > m) {
      s = s * expf(m - xv) + 1.f;  // exp(-inf) = 0 on the first element
      m = xv;
    } else {
      s += expf(xv - m);
    }
  }
  const float row_max = block_max(m, scratch);
  s = m == -INFINITY ? 0.f : s * expf(m - row_max);
  const float lse = row_max + logf(block_sum(s, scratch));
  if (threadIdx.x == 0) row_loss[row] = lse - target_logit;
  if (dx)
    for (int v = threadIdx.x; v < vocab; v += blockDim.x) {
      const float p = expf(to_float(x[v]) - lse);
      dx[v] = from_float<D>((p - (v == target ? 1.f : 0.f)) * grad_scale);
    }
}

// *out += the sum of n floats in double, one block, fixed order.
__global__ void add_sum_kernel(double* out, const float* values, int64_t n) {
  __shared__ double partial[256];
  double s = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += values[i];
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int stride = blockDim.x / 2; stride > 0; stride >>= 1) {
    if (int(threadIdx.x) < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) *out += partial[0];
}

// The chunked head pass: row_loss [rows] (device) for every row and, with dh, the gradients.
// TS is the storage type of h, W and dh, T the type the GEMMs read (the math), L the logits':
//   TS = T = L = float  fp32 parity: fp32 GEMMs, dlogits overwrite the fp32 logits in place;
//   TS = T = bf16, L = float  bf16 operands, fp32 logits, bf16 dlogits, dh written as bf16;
//   TS = float, T = bf16  the float model in bf16 precision: W narrowed to bf16 once per call and
//                   h per chunk, dh written as float by the bf16×bf16→float GEMM; with L = bf16
//                   (bf16 activation storage) the logits come out of the GEMM in bf16 and dlogits
//                   overwrite them, with L = float a bf16 dlogits chunk of its own.
// The softmax and the loss are fp32 in every case; dW (fp32) is added to (beta = 1).
template <class TS, class T, class L>
void head_pass(GemmHandle& gh, float* row_loss, const TS* h, const TS* W, const int32_t* targets,
               const HeadShape& s, TS* dh, float* dW, double grad_scale, cudaStream_t stream) {
  constexpr bool kNarrow = !std::is_same_v<TS, T>;
  static_assert(!kNarrow || std::is_same_v<T, bf16>, "only float storage narrows, to bf16");
  static_assert(std::is_same_v<L, float> || std::is_same_v<L, T>, "logits: fp32 or the math type");
  const int64_t chunk = std::min(kChunkRows, s.rows);
  L* logits = nullptr;
  T* dlogits = nullptr;
  CUDA_CHECK(malloc_async(&logits, size_t(chunk) * s.vocab * sizeof(L), stream));
  if (dh) {
    if constexpr (std::is_same_v<L, T>)
      dlogits = logits;  // in place
    else
      CUDA_CHECK(malloc_async(&dlogits, size_t(chunk) * s.vocab * sizeof(T), stream));
  }
  // The operands as the GEMMs read them: the inputs themselves, or bf16 copies in scratch.
  const T* W_math = nullptr;
  T* W_narrow = nullptr;
  T* h_narrow = nullptr;
  if constexpr (kNarrow) {
    CUDA_CHECK(malloc_async(&W_narrow, size_t(s.vocab) * s.d * sizeof(T), stream));
    CUDA_CHECK(malloc_async(&h_narrow, size_t(chunk) * s.d * sizeof(T), stream));
    convert(W_narrow, W, int64_t(s.vocab) * s.d, stream);
    W_math = W_narrow;
  } else {
    W_math = W;
  }
  for (int64_t begin = 0; begin < s.rows; begin += chunk) {
    const int rows = int(std::min(chunk, s.rows - begin));
    const T* hc = nullptr;
    if constexpr (kNarrow) {
      convert(h_narrow, h + begin * s.d, int64_t(rows) * s.d, stream);
      hc = h_narrow;
    } else {
      hc = h + begin * s.d;
    }
    gemm(gh, false, true, rows, s.vocab, s.d, 1.f, hc, s.d, W_math, s.d, 0.f, logits, s.vocab,
         stream);
    launch(softmax_xent_kernel<L, T>, rows, kThreads, 0, stream, row_loss + begin, dlogits, logits,
           targets + begin, s.vocab, float(grad_scale));
    CUDA_CHECK_LAUNCH();
    if (dh) {
      // dh = dlogits·W ; dW += dlogitsᵀ·h
      gemm(gh, false, false, rows, s.d, s.vocab, 1.f, dlogits, s.vocab, W_math, s.d, 0.f,
           dh + begin * s.d, s.d, stream);
      if (dW)
        gemm(gh, true, false, s.vocab, s.d, rows, 1.f, dlogits, s.vocab, hc, s.d, 1.f, dW, s.d,
             stream);
    }
  }
  if (h_narrow) CUDA_CHECK(cudaFreeAsync(h_narrow, stream));
  if (W_narrow) CUDA_CHECK(cudaFreeAsync(W_narrow, stream));
  if constexpr (!std::is_same_v<L, T>)
    if (dlogits) CUDA_CHECK(cudaFreeAsync(dlogits, stream));
  CUDA_CHECK(cudaFreeAsync(logits, stream));
}

// The loss of every row summed into *loss_sum (device), gradients as head_pass.
template <class TS, class T, class L>
void head_loss_add(GemmHandle& gh, double* loss_sum, const TS* h, const TS* W,
                   const int32_t* targets, const HeadShape& s, TS* dh, float* dW, double grad_scale,
                   cudaStream_t stream) {
  if (s.rows <= 0) return;
  float* row_loss = nullptr;
  CUDA_CHECK(malloc_async(&row_loss, size_t(s.rows) * sizeof(float), stream));
  head_pass<TS, T, L>(gh, row_loss, h, W, targets, s, dh, dW, grad_scale, stream);
  launch(add_sum_kernel, 1, 256, 0, stream, loss_sum, row_loss, s.rows);
  CUDA_CHECK_LAUNCH();
  CUDA_CHECK(cudaFreeAsync(row_loss, stream));
}

// Each row's loss into host memory (synchronises the stream).
template <class TS, class T, class L>
void head_row_losses(GemmHandle& gh, double* losses, const TS* h, const TS* W,
                     const int32_t* targets, const HeadShape& s, cudaStream_t stream) {
  if (s.rows <= 0) return;
  float* row_loss = nullptr;
  CUDA_CHECK(malloc_async(&row_loss, size_t(s.rows) * sizeof(float), stream));
  head_pass<TS, T, L>(gh, row_loss, h, W, targets, s, nullptr, nullptr, 0.0, stream);
  std::vector<float> host(s.rows);
  CUDA_CHECK(cudaMemcpyAsync(host.data(), row_loss, size_t(s.rows) * sizeof(float),
                             cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaFreeAsync(row_loss, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::copy(host.begin(), host.end(), losses);
}
}  // namespace

template <class T>
void lm_head_cross_entropy_add(GemmHandle& gh, double* loss_sum, const T* h, const T* W,
                               const int32_t* targets, const HeadShape& s, T* dh, float* dW,
                               double grad_scale, cudaStream_t stream) {
  head_loss_add<T, T, float>(gh, loss_sum, h, W, targets, s, dh, dW, grad_scale, stream);
}

void lm_head_cross_entropy_add_in_bf16(GemmHandle& gh, double* loss_sum, const float* h,
                                       const float* W, const int32_t* targets, const HeadShape& s,
                                       HeadLogits logits, float* dh, float* dW, double grad_scale,
                                       cudaStream_t stream) {
  if (logits == HeadLogits::bf16)
    head_loss_add<float, bf16, bf16>(gh, loss_sum, h, W, targets, s, dh, dW, grad_scale, stream);
  else
    head_loss_add<float, bf16, float>(gh, loss_sum, h, W, targets, s, dh, dW, grad_scale, stream);
}

template <class T>
double lm_head_cross_entropy(GemmHandle& gh, const T* h, const T* W, const int32_t* targets,
                             const HeadShape& s, T* dh, float* dW, double grad_scale,
                             cudaStream_t stream) {
  if (s.rows <= 0) return 0.0;
  double* loss_sum = nullptr;
  CUDA_CHECK(malloc_async(&loss_sum, sizeof(double), stream));
  CUDA_CHECK(cudaMemsetAsync(loss_sum, 0, sizeof(double), stream));
  lm_head_cross_entropy_add(gh, loss_sum, h, W, targets, s, dh, dW, grad_scale, stream);
  double result = 0;
  CUDA_CHECK(cudaMemcpyAsync(&result, loss_sum, sizeof(double), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaFreeAsync(loss_sum, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return result;
}

template <class T>
void lm_head_row_losses(GemmHandle& gh, double* losses, const T* h, const T* W,
                        const int32_t* targets, const HeadShape& s, cudaStream_t stream) {
  head_row_losses<T, T, float>(gh, losses, h, W, targets, s, stream);
}

void lm_head_row_losses_in_bf16(GemmHandle& gh, double* losses, const float* h, const float* W,
                                const int32_t* targets, const HeadShape& s, HeadLogits logits,
                                cudaStream_t stream) {
  if (logits == HeadLogits::bf16)
    head_row_losses<float, bf16, bf16>(gh, losses, h, W, targets, s, stream);
  else
    head_row_losses<float, bf16, float>(gh, losses, h, W, targets, s, stream);
}

template <class T>
void lm_head_logits(GemmHandle& gh, float* logits, const T* h, const T* W, const HeadShape& s,
                    cudaStream_t stream) {
  gemm(gh, false, true, int(s.rows), s.vocab, s.d, 1.f, h, s.d, W, s.d, 0.f, logits, s.vocab,
       stream);
}

template void lm_head_cross_entropy_add<float>(GemmHandle&, double*, const float*, const float*,
                                               const int32_t*, const HeadShape&, float*, float*,
                                               double, cudaStream_t);
template void lm_head_cross_entropy_add<bf16>(GemmHandle&, double*, const bf16*, const bf16*,
                                              const int32_t*, const HeadShape&, bf16*, float*,
                                              double, cudaStream_t);
template double lm_head_cross_entropy<float>(GemmHandle&, const float*, const float*,
                                             const int32_t*, const HeadShape&, float*, float*,
                                             double, cudaStream_t);
template double lm_head_cross_entropy<bf16>(GemmHandle&, const bf16*, const bf16*, const int32_t*,
                                            const HeadShape&, bf16*, float*, double, cudaStream_t);
template void lm_head_row_losses<float>(GemmHandle&, double*, const float*, const float*,
                                        const int32_t*, const HeadShape&, cudaStream_t);
template void lm_head_row_losses<bf16>(GemmHandle&, double*, const bf16*, const bf16*,
                                       const int32_t*, const HeadShape&, cudaStream_t);
template void lm_head_logits<float>(GemmHandle&, float*, const float*, const float*,
                                    const HeadShape&, cudaStream_t);
template void lm_head_logits<bf16>(GemmHandle&, float*, const bf16*, const bf16*, const HeadShape&,
                                   cudaStream_t);

}  // namespace db::cuda
