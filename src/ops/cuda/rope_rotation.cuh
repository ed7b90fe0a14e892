// The rotation of one RoPE pair (x1, x2) = (v[i], v[i + hd/2]) by the angle whose cosine and sine
// are c, s (sign = −1: the inverse, for the backward), in fp32: the one formula of the RoPE
// kernels (rope.cu, packed or one pair per thread) and of QK-norm + RoPE (qk_norm.cu), so that
// all of them give the same bits. Only included from .cu files.
#pragma once

namespace db::cuda::detail {

__device__ __forceinline__ float rope_first(float x1, float x2, float c, float s, float sign) {
  return x1 * c - sign * x2 * s;
}
__device__ __forceinline__ float rope_second(float x1, float x2, float c, float s, float sign) {
  return x2 * c + sign * x1 * s;
}

}  // namespace db::cuda::detail
