// What the emulated libraries share: bf16 ↔ fp32 as the device converts (round to nearest even,
// NaN kept quiet), and the bounds check of an operand against the emulated device's allocations.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "emulation/memory_map.hpp"
#include "emulation/simt/fault.hpp"

namespace db::emulation {

inline float bf16_bits_to_float(uint16_t bits) {
  const uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

// Round to nearest, ties to even, as __float2bfloat16_rn.
inline uint16_t float_to_bf16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return uint16_t((bits >> 16) | 0x0040u);  // NaN
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t(bits >> 16);
}

inline float round_to_bf16(float value) {
  return bf16_bits_to_float(float_to_bf16_bits(value));
}

// The device work of `call` reads or writes [p, p + bytes) of `operand`: a DeviceFault unless
// one live allocation (device or pinned host memory) holds all of it.
inline void require_device_range(const char* call, const char* operand, const void* p,
                                 size_t bytes) {
  if (bytes == 0 || find_allocation(p, bytes)) return;
  char where[32];
  std::snprintf(where, sizeof where, "%p", p);
  throw DeviceFault(std::string(call) + ": operand " + operand + " [" + where + ", +" +
                    std::to_string(bytes) + " bytes) is not inside one device allocation" +
                    (find_allocation(p, 1) ? " (it runs past the end of its allocation)" : ""));
}

}  // namespace db::emulation
