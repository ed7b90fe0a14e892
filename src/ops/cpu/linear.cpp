#include "ops/cpu/linear.hpp"

#include "ops/cpu/gemm.hpp"

namespace db::cpu {

template <class T>
void linear_forward(T* y, const T* x, const T* W, int64_t N, int in, int out) {
  gemm(false, true, int(N), out, in, T(1), x, in, W, in, T(0), y, out);
}

template <class T>
void linear_backward(T* dx, T* dW, const T* dy, const T* x, const T* W, int64_t N, int in, int out,
                     bool accumulate_dx) {
  if (dx) gemm(false, false, int(N), in, out, T(1), dy, out, W, in, T(accumulate_dx), dx, in);
  if (dW) gemm(true, false, out, in, int(N), T(1), dy, out, x, in, T(1), dW, in);
}

template void linear_forward<float>(float*, const float*, const float*, int64_t, int, int);
template void linear_forward<double>(double*, const double*, const double*, int64_t, int, int);
template void linear_backward<float>(float*, float*, const float*, const float*, const float*,
                                     int64_t, int, int, bool);
template void linear_backward<double>(double*, double*, const double*, const double*, const double*,
                                      int64_t, int, int, bool);

}  // namespace db::cpu
