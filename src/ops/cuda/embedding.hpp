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

// dE[token] += dx[row] for every row, deterministic: a stable sort of the rows by token, then
// each token's rows are added in row order (the CPU's order) by one thread per value, no
// atomics. Tokens must lie in [0, rows of dE).
template <class TX>
void embedding_backward(float* dE, const int32_t* tokens, const TX* dx, int64_t N, int d,
                        cudaStream_t stream = nullptr);

}  // namespace db::cuda
