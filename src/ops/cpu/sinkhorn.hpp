// Sinkhorn normalisation of mHC's residual mixing (spec §8): M = exp(logits − rowmax), then
// `iters` × { rows ← rows / (rowsum + eps); columns ← columns / (colsum + eps) }. Computed in
// float64 whatever T is (the spec asks for at least fp32) and differentiated through every
// iteration; the backward rebuilds the iterates of each matrix. The math is
// ops/rows/sinkhorn_rows.hpp, shared with the CUDA kernel.
#pragma once
#include <cstdint>

#include "ops/shapes.hpp"

namespace db::cpu {

using ::db::SinkhornShape;

// logits, out: [count, n, n] row-major.
template <class T>
void sinkhorn_forward(T* out, const T* logits, SinkhornShape s);

// dlogits (overwritten) from dout and the forward's logits. The row max is differentiated like
// torch.amax (gradient shared equally between tied maxima), so that eps effects match exactly.
template <class T>
void sinkhorn_backward(T* dlogits, const T* dout, const T* logits, SinkhornShape s);

}  // namespace db::cpu
