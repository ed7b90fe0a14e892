// Token embedding on the GPU (spec §0), mirroring cpu/embedding.hpp. The table is the fp32
// master (or a bf16 copy); the gradient is always fp32.
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"

namespace db::cuda {

// x[n] = E[tokens[n]] (converted to TX).
template <class TX, class TE>
void embedding_forward(TX* x, const int32_t* tokens, const TE* E, int64_t N, int d,
                       cudaStream_t stream = nullptr);

// dE[token] += dx[row] for every row (fp32 atomics: the order of additions into one token's
// row is not fixed, so the sum is reproducible only to rounding).
template <class TX>
void embedding_backward(float* dE, const int32_t* tokens, const TX* dx, int64_t N, int d,
                        cudaStream_t stream = nullptr);

}  // namespace db::cuda
