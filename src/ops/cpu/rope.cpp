#include "ops/cpu/rope.hpp"

#include <cmath>

namespace db::cpu {

RopeTable::RopeTable(int seq_len_, int head_dim_, double theta)
    : seq_len(seq_len_), head_dim(head_dim_) {
  const int half = head_dim / 2;
  cos.resize(size_t(seq_len) * half);
  sin.resize(cos.size());
  for (int t = 0; t < seq_len; ++t)
    for (int i = 0; i < half; ++i) {
      const double angle = t * std::pow(theta, -2.0 * i / head_dim);
      cos[size_t(t) * half + i] = std::cos(angle);
      sin[size_t(t) * half + i] = std::sin(angle);
    }
}

template <class T>
void rope_apply(T* x, const RopeTable& table, int64_t B, int T_len, int heads, bool inverse) {
  const int hd = table.head_dim, half = hd / 2;
  const double sign = inverse ? -1.0 : 1.0;
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < B * T_len; ++row) {
    const int t = int(row % T_len);
    const double* c = &table.cos[size_t(t) * half];
    const double* s = &table.sin[size_t(t) * half];
    for (int h = 0; h < heads; ++h) {
      T* v = x + (row * heads + h) * hd;
      for (int i = 0; i < half; ++i) {
        const double x1 = v[i], x2 = v[i + half];
        v[i] = T(x1 * c[i] - sign * x2 * s[i]);
        v[i + half] = T(x2 * c[i] + sign * x1 * s[i]);
      }
    }
  }
}

template void rope_apply<float>(float*, const RopeTable&, int64_t, int, int, bool);
template void rope_apply<double>(double*, const RopeTable&, int64_t, int, int, bool);

}  // namespace db::cpu
