// A design's own state values as they are stored: in the model's type T, or in bf16 under
// train.state_dtype = bf16 (AttnRes's sources, which every later consumer reads: half the bytes
// of each read). Reads give T, a bf16 value widened exactly; a store into bf16 rounds as
// RoundToBf16 (state_rounding.hpp) does, so the values are those the rounding in T buffers gave.
// StateValues and StateTarget are views that travel by value into DB_HD functors; StateBuffer
// owns the memory.
#pragma once
#include <cstdint>

#include "core/bfloat16.hpp"
#include "core/buffer.hpp"
#include "core/host_device.hpp"
#include "ops/launch.hpp"

namespace db {

// Read-only values: `narrow` set means bf16, else `wide` (a plain T pointer converts).
template <class T>
struct StateValues {
  const T* wide = nullptr;
  const bfloat16* narrow = nullptr;
  StateValues() = default;
  DB_HD StateValues(const T* values) : wide(values) {}  // implicit: a T array is a state too
  DB_HD StateValues(const T* w, const bfloat16* n) : wide(w), narrow(n) {}
  DB_HD T operator[](int64_t i) const { return narrow ? T(to_float(narrow[i])) : wide[i]; }
  DB_HD StateValues operator+(int64_t offset) const {
    return narrow ? StateValues(nullptr, narrow + offset) : StateValues(wide + offset, nullptr);
  }
  DB_HD bool empty() const { return !wide && !narrow; }
};

// Writable values, as StateValues.
template <class T>
struct StateTarget {
  T* wide = nullptr;
  bfloat16* narrow = nullptr;
  StateTarget() = default;
  DB_HD StateTarget(T* values) : wide(values) {}  // implicit: a T array is a state too
  DB_HD StateTarget(T* w, bfloat16* n) : wide(w), narrow(n) {}
  // A double goes through float first, as RoundToBf16.
  DB_HD void store(int64_t i, T v) const {
    if (narrow)
      narrow[i] = to_bfloat16(float(v));
    else
      wide[i] = v;
  }
};

namespace state_kernels {
template <class T>
struct Store {
  StateTarget<T> out;
  const T* x;
  DB_HD void operator()(int64_t i) const { out.store(i, x[i]); }
};
template <class T>
struct Widen {
  T* out;
  StateValues<T> x;
  DB_HD void operator()(int64_t i) const { out[i] = x[i]; }
};
}  // namespace state_kernels

// count values in T or in bf16, in the current memory space (core/buffer.hpp).
template <class T>
class StateBuffer {
 public:
  void resize(int64_t count, bool bf16) {
    if (bf16) {
      wide_ = {};
      narrow_.resize(count);
    } else {
      narrow_ = {};
      wide_.resize(count);
    }
  }
  // x [count] stored (rounded to bf16 where bf16).
  void assign(MemorySpace space, const T* x, int64_t count, bool bf16) {
    resize(count, bf16);
    if (bf16)
      for_each_index(space, count, state_kernels::Store<T>{target(), x});
    else
      wide_.assign(x, count);
  }
  // The values widened into out [count].
  void widen_into(MemorySpace space, T* out, int64_t count) const {
    for_each_index(space, count, state_kernels::Widen<T>{out, values()});
  }

  StateValues<T> values() const { return {wide_.data(), narrow_.data()}; }
  StateTarget<T> target() { return {wide_.data(), narrow_.data()}; }

 private:
  Buffer<T> wide_;
  Buffer<bfloat16> narrow_;
};

}  // namespace db
