#include "train/adamw.hpp"

#include <algorithm>
#include <cmath>

#include "core/parallel.hpp"

namespace db {

template <class T>
double global_norm(std::span<const T> grads) {
  const int64_t n = int64_t(grads.size());
  const int64_t chunks = (n + 4095) / 4096;
  std::vector<double> partial(chunks, 0.0);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    double s = 0;
    for (int64_t i = c * 4096; i < std::min(n, (c + 1) * 4096); ++i)
      s += double(grads[i]) * grads[i];
    partial[c] = s;
  }
  double sum = 0;
  for (double p : partial) sum += p;
  return std::sqrt(sum);
}

template <class T>
AdamW<T>::AdamW(const ParameterLayout& layout, const Recipe& recipe)
    : recipe_(recipe),
      decay_(layout.total_size(), 0),
      m_(layout.total_size(), 0.f),
      v_(layout.total_size(), 0.f) {
  for (const ParameterSpec& s : layout.specs())
    std::fill(decay_.begin() + s.offset, decay_.begin() + s.offset + s.size(),
              uint8_t(s.weight_decay));
}

template <class T>
void AdamW<T>::step(std::span<T> values, std::span<const T> grads, double lr, double clip_scale) {
  ++t_;
  const double b1 = recipe_.beta1, b2 = recipe_.beta2, eps = recipe_.adam_eps;
  const double bias1 = 1.0 - std::pow(b1, double(t_)), bias2 = 1.0 - std::pow(b2, double(t_));
  const double wd = recipe_.weight_decay;
  const int64_t n = int64_t(values.size());
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const double g = double(grads[i]) * clip_scale;
    const double m = b1 * m_[i] + (1 - b1) * g;
    const double v = b2 * v_[i] + (1 - b2) * g * g;
    m_[i] = float(m);
    v_[i] = float(v);
    double p = values[i];
    if (decay_[i]) p -= lr * wd * p;  // decoupled decay first, as torch.optim.AdamW
    p -= lr * (m / bias1) / (std::sqrt(v / bias2) + eps);
    values[i] = T(p);
  }
}

template double global_norm<float>(std::span<const float>);
template double global_norm<double>(std::span<const double>);
template class AdamW<float>;
template class AdamW<double>;

}  // namespace db
