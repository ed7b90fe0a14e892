// Linear layer without bias, PyTorch layout: W is [out, in], y[N,out] = x[N,in]·Wᵀ.
#pragma once
#include <cstdint>

namespace db::cpu {

template <class T>
void linear_forward(T* y, const T* x, const T* W, int64_t N, int in, int out);

// dx = dy·W (overwritten, or added when accumulate_dx), dW += dyᵀ·x. dx may be null.
template <class T>
void linear_backward(T* dx, T* dW, const T* dy, const T* x, const T* W, int64_t N, int in, int out,
                     bool accumulate_dx = false);

}  // namespace db::cpu
