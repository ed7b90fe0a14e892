// The fast attention paths take bf16 tensors, with the head dim padded to a multiple of 8 for
// cuDNN: these copies convert [rows, width] ↔ bf16 [rows, padded_width], zero-filling the
// padding columns (zeros leave q·k, p·v and the gradients of the real columns unchanged). The
// fp32 forms serve the fp32 activations of the CUDA ops; the bf16 forms the bf16 activation
// storage (cuda_bf16_storage.hpp), which needs a copy only when the head dim is padded.
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"

namespace db::cuda {

// dst[r, c] = bf16(src[r, c]) for c < width, 0 for width ≤ c < padded_width.
void to_padded_bf16(bf16* dst, const float* src, int64_t rows, int width, int padded_width,
                    cudaStream_t stream);
void to_padded_bf16(bf16* dst, const bf16* src, int64_t rows, int width, int padded_width,
                    cudaStream_t stream);
// dst[r, c] = src[r, c] for c < width (the padding columns are dropped).
void from_padded_bf16(float* dst, const bf16* src, int64_t rows, int width, int padded_width,
                      cudaStream_t stream);
void from_padded_bf16(bf16* dst, const bf16* src, int64_t rows, int width, int padded_width,
                      cudaStream_t stream);

}  // namespace db::cuda
