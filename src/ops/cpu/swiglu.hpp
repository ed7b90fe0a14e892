// SwiGLU gate (spec §0): h = silu(a) ⊙ b with a = W1·u, b = W3·u.
#pragma once
#include <cstdint>

namespace db::cpu {

template <class T>
void swiglu_forward(T* h, const T* a, const T* b, int64_t count);

// da, db overwritten.
template <class T>
void swiglu_backward(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count);

}  // namespace db::cpu
