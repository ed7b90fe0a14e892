// The fast attention paths take bf16 tensors while the CUDA ops store fp32 activations
// (core/precision.hpp): these copies convert [rows, width] fp32 ↔ bf16 [rows, padded_width],
// zero-filling the padding columns (cuDNN needs a head dim that is a multiple of 8; zeros leave
// q·k, p·v and the gradients of the real columns unchanged).
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"

namespace db::cuda {

// dst[r, c] = bf16(src[r, c]) for c < width, 0 for width ≤ c < padded_width.
void to_padded_bf16(bf16* dst, const float* src, int64_t rows, int width, int padded_width,
                    cudaStream_t stream);
// dst[r, c] = float(src[r, c]) for c < width (the padding columns are dropped).
void from_padded_bf16(float* dst, const bf16* src, int64_t rows, int width, int padded_width,
                      cudaStream_t stream);

}  // namespace db::cuda
