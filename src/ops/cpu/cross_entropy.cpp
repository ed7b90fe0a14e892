#include "ops/cpu/cross_entropy.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ops/cpu/gemm.hpp"
#include "ops/cpu/linear.hpp"

namespace db::cpu {
namespace {
constexpr int64_t kHeadChunkRows = 256;
}

template <class T>
double lm_head_cross_entropy(const T* h, const T* W, const int32_t* targets, const HeadShape& s,
                             T* dh, T* dW, double grad_scale) {
  std::vector<T> logits(size_t(std::min(kHeadChunkRows, s.rows)) * s.vocab);
  double loss_sum = 0;
  for (int64_t begin = 0; begin < s.rows; begin += kHeadChunkRows) {
    const int64_t rows = std::min(kHeadChunkRows, s.rows - begin);
    const T* hc = h + begin * s.d;
    linear_forward(logits.data(), hc, W, rows, s.d, s.vocab);
    std::vector<double> row_loss(rows, 0.0);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      T* row = &logits[size_t(r) * s.vocab];
      const int32_t target = targets[begin + r];
      if (target < 0) {
        std::fill(row, row + s.vocab, T(0));
        continue;
      }
      const T m = *std::max_element(row, row + s.vocab);
      double sum = 0;
      for (int v = 0; v < s.vocab; ++v) sum += std::exp(double(row[v] - m));
      const double lse = m + std::log(sum);
      row_loss[r] = lse - row[target];
      if (dh) {  // dlogits = (softmax − onehot)·scale
        for (int v = 0; v < s.vocab; ++v) row[v] = T(std::exp(double(row[v]) - lse) * grad_scale);
        row[target] -= T(grad_scale);
      }
    }
    for (int64_t r = 0; r < rows; ++r) loss_sum += row_loss[r];
    if (dh) linear_backward(dh + begin * s.d, dW, logits.data(), hc, W, rows, s.d, s.vocab);
  }
  return loss_sum;
}

template <class T>
void lm_head_logits(T* logits, const T* h, const T* W, const HeadShape& s) {
  linear_forward(logits, h, W, s.rows, s.d, s.vocab);
}

template double lm_head_cross_entropy<float>(const float*, const float*, const int32_t*,
                                             const HeadShape&, float*, float*, double);
template double lm_head_cross_entropy<double>(const double*, const double*, const int32_t*,
                                              const HeadShape&, double*, double*, double);
template void lm_head_logits<float>(float*, const float*, const float*, const HeadShape&);
template void lm_head_logits<double>(double*, const double*, const double*, const HeadShape&);

}  // namespace db::cpu
