// The part of CUB the backend uses, on the emulated device: DeviceRadixSort::SortPairs, a stable
// sort of (key, value) pairs by the key's bits [begin_bit, end_bit), signed keys in their
// numeric order (CUB flips the sign bit), run in stream order.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "emulation/runtime/stream_work.hpp"

namespace cub {

struct DeviceRadixSort {
  template <class Key, class Value>
  static cudaError_t SortPairs(void* temp, size_t& temp_bytes, const Key* keys_in, Key* keys_out,
                               const Value* values_in, Value* values_out, int count,
                               int begin_bit = 0, int end_bit = int(sizeof(Key) * 8),
                               cudaStream_t stream = nullptr) {
    static_assert(std::is_integral_v<Key>, "the emulated radix sort takes integer keys");
    if (!temp) {
      temp_bytes =
          256;  // the real one asks for scratch; the emulation needs none but keeps the call
      return cudaSuccess;
    }
    return db::emulation::enqueue(stream, "cub::DeviceRadixSort::SortPairs", [=] {
      using Bits = std::make_unsigned_t<Key>;
      const auto radix = [&](Key k) {
        Bits b = Bits(k);
        if constexpr (std::is_signed_v<Key>) b ^= Bits(Bits(1) << (sizeof(Key) * 8 - 1));
        const int width = end_bit - begin_bit;
        b >>= begin_bit;
        if (width < int(sizeof(Key) * 8)) b &= Bits((Bits(1) << width) - 1);
        return b;
      };
      std::vector<int> order(static_cast<size_t>(count));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return radix(keys_in[a]) < radix(keys_in[b]); });
      std::vector<Key> keys(static_cast<size_t>(count));
      std::vector<Value> values(static_cast<size_t>(count));
      for (int i = 0; i < count; ++i) keys[i] = keys_in[order[i]], values[i] = values_in[order[i]];
      std::copy(keys.begin(), keys.end(), keys_out);
      std::copy(values.begin(), values.end(), values_out);
    });
  }
};

}  // namespace cub
