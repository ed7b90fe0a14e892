#include "ops/cpu/swiglu.hpp"

#include <cmath>

namespace db::cpu {

template <class T>
void swiglu_forward(T* h, const T* a, const T* b, int64_t count) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const T sigmoid = T(1) / (T(1) + std::exp(-a[i]));
    h[i] = a[i] * sigmoid * b[i];
  }
}

template <class T>
void swiglu_backward(T* da, T* db, const T* dh, const T* a, const T* b, int64_t count) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const T sigmoid = T(1) / (T(1) + std::exp(-a[i]));
    const T silu = a[i] * sigmoid;
    // silu'(a) = σ(a)·(1 + a·(1 − σ(a)))
    da[i] = dh[i] * b[i] * sigmoid * (T(1) + a[i] * (T(1) - sigmoid));
    db[i] = dh[i] * silu;
  }
}

template void swiglu_forward<float>(float*, const float*, const float*, int64_t);
template void swiglu_forward<double>(double*, const double*, const double*, int64_t);
template void swiglu_backward<float>(float*, float*, const float*, const float*, const float*,
                                     int64_t);
template void swiglu_backward<double>(double*, double*, const double*, const double*, const double*,
                                      int64_t);

}  // namespace db::cpu
