// Small element-wise kernels the model glue needs: precision casts, y = b·y + a·x, fills.
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"

namespace db::cuda {

// dst[i] = src[i] converted (float↔bf16, or a copy). Tensors aligned to the pack
// (ops/cuda/packed_access.cuh: 16 bytes of the narrower type), or all misaligned by the same
// number of values (that head done one value per thread), move 16 bytes per access.
template <class TD, class TS>
void convert(TD* dst, const TS* src, int64_t count, cudaStream_t stream = nullptr);
// The same, one value per thread whatever the alignment: the twin the packed kernel is tested
// against (tests/gpu/cuda_packed_kernels_test.cpp); likewise axpby_scalar below.
template <class TD, class TS>
void convert_scalar(TD* dst, const TS* src, int64_t count, cudaStream_t stream = nullptr);

// y = b·y + a·x (b = 0 overwrites y without reading it), as Ops::axpby; in fp32, rounded once
// where y is bf16 (StorageOps::axpby). Packed where aligned, as convert; y may be x.
void axpby(float* y, float a, const float* x, float b, int64_t count,
           cudaStream_t stream = nullptr);
void axpby(bf16* y, float a, const bf16* x, float b, int64_t count, cudaStream_t stream = nullptr);
void axpby_scalar(float* y, float a, const float* x, float b, int64_t count,
                  cudaStream_t stream = nullptr);
void axpby_scalar(bf16* y, float a, const bf16* x, float b, int64_t count,
                  cudaStream_t stream = nullptr);

// Fills with N(0, std²) truncated at ±3σ from a counter-based hash of (seed, index): the same
// values for a given seed whatever the launch shape (benchmark init, not the CPU stream).
void fill_truncated_normal(float* x, int64_t count, float std, uint64_t seed,
                           cudaStream_t stream = nullptr);
void fill_constant(float* x, int64_t count, float value, cudaStream_t stream = nullptr);

}  // namespace db::cuda
