// SwiGLU gate on the GPU (spec §0): h = silu(a) ⊙ b, mirroring cpu/swiglu.hpp; fp32 math.
#pragma once
#include <cstdint>

#include "ops/cuda/types.hpp"

namespace db::cuda {

template <class T>
void swiglu_forward(T* h, const T* a, const T* b, int64_t count, cudaStream_t stream = nullptr);

// da, db overwritten.
template <class T>
void swiglu_backward(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count,
                     cudaStream_t stream = nullptr);

}  // namespace db::cuda
