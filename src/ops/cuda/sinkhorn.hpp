// Sinkhorn normalisation of mHC's residual mixing matrix (spec §8) per token on the GPU, with
// the row functions of ops/rows/sinkhorn_rows.hpp that the CPU runs too (double precision, the
// row max differentiated like torch.amax): one thread per token; the backward recomputes the
// forward iterates (nothing stored), O(iterations²) small steps per token.
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"

namespace db::cuda {

// logits, out: [N, n, n] row-major per token; n ≤ 8.
void sinkhorn_forward(float* out, const float* logits, int64_t N, int n, int iterations = 20,
                      double eps = 1e-6, cudaStream_t stream = nullptr);
// dlogits overwritten.
void sinkhorn_backward(float* dlogits, const float* dout, const float* logits, int64_t N, int n,
                       int iterations = 20, double eps = 1e-6, cudaStream_t stream = nullptr);

}  // namespace db::cuda
