// SwiGLU gate on the GPU (spec §0): h = silu(a) ⊙ b, mirroring cpu/swiglu.hpp; fp32 math.
// Read and written 16 bytes per access where the tensors are aligned to 16 bytes or all lie the
// same number of values past such a boundary (ops/cuda/packed_access.cuh, pack_head).
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

// The same, one value per thread whatever the alignment: the twin the packed kernels are tested
// against (tests/gpu/cuda_packed_kernels_test.cpp).
template <class T>
void swiglu_forward_scalar(T* h, const T* a, const T* b, int64_t count,
                           cudaStream_t stream = nullptr);
template <class T>
void swiglu_backward_scalar(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count,
                            cudaStream_t stream = nullptr);

}  // namespace db::cuda
