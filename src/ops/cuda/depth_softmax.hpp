// The AttnRes depth softmax (§9, §10) on the GPU, mirroring cpu/depth_softmax.hpp: per token,
// K_i = g ⊙ RMSNorm(v_i), w = softmax_i(q·K_i), h = Σ_i w_i·v_i. The formulas are the row
// functions of ops/rows/depth_softmax_rows.hpp (shared with the CPU); the kernels reduce each
// d-long dot product over one thread block in double.
// `sources` and `dsources` are host arrays of device pointers; each call copies them to a
// small device array.
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"
#include "ops/shapes.hpp"

namespace db::cuda {

// weights, rstd: [rows, sources] kept for the backward; h overwritten.
void depth_softmax_forward(float* h, float* weights, float* rstd, const float* const* sources,
                           const float* query, const float* key_gain, const DepthMixShape& s,
                           cudaStream_t stream);
// dsources[i], dquery and dkey_gain added; dquery and dkey_gain are sums over rows in fixed
// chunks (column_sums.hpp), so the result is deterministic.
void depth_softmax_backward(float* const* dsources, float* dquery, float* dkey_gain,
                            const float* dh, const float* const* sources, const float* weights,
                            const float* rstd, const float* query, const float* key_gain,
                            const DepthMixShape& s, cudaStream_t stream);

}  // namespace db::cuda
