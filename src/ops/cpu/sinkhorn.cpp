#include "ops/cpu/sinkhorn.hpp"

#include <algorithm>
#include <vector>

#include "ops/rows/sinkhorn_rows.hpp"

namespace db::cpu {

template <class T>
void sinkhorn_forward(T* out, const T* logits, SinkhornShape s) {
  const int nn = s.n * s.n;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < s.count; ++r) {
    std::vector<double> m(nn);
    rows::sinkhorn_forward_row(out + r * nn, logits + r * nn, s.n, s.iters, s.eps, m.data());
  }
}

template <class T>
void sinkhorn_backward(T* dlogits, const T* dout, const T* logits, SinkhornShape s) {
  const int n = s.n, nn = n * n, iterates = 2 * s.iters + 1;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < s.count; ++r) {
    // The CPU keeps the trace of iterates (the GPU recomputes them): iterate k+1 from k.
    std::vector<double> trace(size_t(iterates) * nn), scratch(3 * nn);
    rows::sinkhorn_iterate(trace.data(), logits + r * nn, n, 0, s.eps);
    for (int k = 0; k + 1 < iterates; ++k) {
      std::copy_n(&trace[size_t(k) * nn], nn, &trace[size_t(k + 1) * nn]);
      rows::sinkhorn_step(&trace[size_t(k + 1) * nn], n, k % 2 == 0, s.eps);
    }
    rows::sinkhorn_backward_row(dlogits + r * nn, dout + r * nn, logits + r * nn, n, s.iters, s.eps,
                                trace.data(), scratch.data());
  }
}

template void sinkhorn_forward<float>(float*, const float*, SinkhornShape);
template void sinkhorn_forward<double>(double*, const double*, SinkhornShape);
template void sinkhorn_backward<float>(float*, const float*, const float*, SinkhornShape);
template void sinkhorn_backward<double>(double*, const double*, const double*, SinkhornShape);

}  // namespace db::cpu
