// Test values stored in bf16 (the bf16 activation storage, train.state_dtype = bf16): a vector
// rounded as the stores round it (a double through float first).
#pragma once
#include <vector>

#include "core/bfloat16.hpp"

namespace db::test {

template <class T>
std::vector<bfloat16> to_bf16(const std::vector<T>& values) {
  std::vector<bfloat16> out;
  out.reserve(values.size());
  for (T v : values) out.push_back(to_bfloat16(float(v)));
  return out;
}

}  // namespace db::test
