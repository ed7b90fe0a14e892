// Sinkhorn normalisation of mHC's residual mixing matrix (spec §8), per token, fp32:
// M = exp(logits − rowmax), then `iterations` rounds of (row normalisation, column
// normalisation), each dividing by (sum + eps). The backward differentiates through every
// iteration (recomputing the forward states, nothing stored) and through the row max.
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"

namespace db::cuda {

// logits, out: [N, n, n] row-major per token; n ≤ 8.
void sinkhorn_forward(float* out, const float* logits, int64_t N, int n, int iterations = 20,
                      float eps = 1e-6f, cudaStream_t stream = nullptr);
// dlogits overwritten.
void sinkhorn_backward(float* dlogits, const float* dout, const float* logits, int64_t N, int n,
                       int iterations = 20, float eps = 1e-6f, cudaStream_t stream = nullptr);

}  // namespace db::cuda
