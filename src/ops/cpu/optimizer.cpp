#include "ops/cpu/optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace db::cpu {

template <class T>
void adamw_update(T* values, const T* grads, float* m_state, float* v_state, const uint8_t* decay,
                  int64_t count, const AdamWUpdate& u, bfloat16* values_bf16) {
  const double bias1 = 1.0 - std::pow(u.beta1, double(u.step));
  const double bias2 = 1.0 - std::pow(u.beta2, double(u.step));
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < count; ++i) {
    const double g = double(grads[i]) * u.clip_scale;
    const double m = u.beta1 * m_state[i] + (1 - u.beta1) * g;
    const double v = u.beta2 * v_state[i] + (1 - u.beta2) * g * g;
    m_state[i] = float(m);
    v_state[i] = float(v);
    double p = values[i];
    if (decay[i]) p -= u.lr * u.weight_decay * p;  // decoupled decay first, as torch.optim.AdamW
    p -= u.lr * (m / bias1) / (std::sqrt(v / bias2) + u.eps);
    values[i] = T(p);
    // From the stored value, not from p: a double rounded straight to bf16 could differ.
    if (values_bf16) values_bf16[i] = to_bfloat16(float(values[i]));
  }
}

template <class T>
double sum_of_squares(const T* x, int64_t count) {
  const int64_t chunks = (count + 4095) / 4096;
  std::vector<double> partial(chunks, 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    double s = 0;
    for (int64_t i = c * 4096; i < std::min(count, (c + 1) * 4096); ++i) s += double(x[i]) * x[i];
    partial[c] = s;
  }
  double sum = 0;
  for (double p : partial) sum += p;
  return sum;
}

template void adamw_update(float*, const float*, float*, float*, const uint8_t*, int64_t,
                           const AdamWUpdate&, bfloat16*);
template void adamw_update(double*, const double*, float*, float*, const uint8_t*, int64_t,
                           const AdamWUpdate&, bfloat16*);
template double sum_of_squares(const float*, int64_t);
template double sum_of_squares(const double*, int64_t);

}  // namespace db::cpu
