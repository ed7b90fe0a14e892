// bf16 as a storage type every backend shares (train.activation_dtype = bf16): the top 16 bits
// of an IEEE float. Rounding is to nearest, ties to even, and every NaN becomes the canonical
// 0x7fff: the bits of CUDA's __float2bfloat16, so the CPU stores exactly what a GPU kernel
// would store from the same float.
// Arithmetic happens in float; this type only holds values.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/host_device.hpp"

namespace db {

struct bfloat16 {
  uint16_t bits;
};
static_assert(sizeof(bfloat16) == 2, "bfloat16 must have the layout of __nv_bfloat16");

DB_HD bfloat16 to_bfloat16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {uint16_t(0x7fffu)};  // CUDA's canonical NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return {uint16_t(u >> 16)};
}

DB_HD float to_float(bfloat16 x) {
  const uint32_t u = uint32_t(x.bits) << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace db
