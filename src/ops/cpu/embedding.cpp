#include "ops/cpu/embedding.hpp"

#include <cstring>

namespace db::cpu {

template <class T>
void embedding_forward(T* x, const int32_t* tokens, const T* E, int64_t N, int d) {
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) std::memcpy(x + n * d, E + int64_t(tokens[n]) * d, sizeof(T) * d);
}

template <class T>
void embedding_backward(T* dE, const int32_t* tokens, const T* dx, int64_t N, int d) {
  // Parallel over columns: rows with the same token never race, and the order of additions is
  // the row order whatever the thread count.
#pragma omp parallel for schedule(static)
  for (int j = 0; j < d; ++j)
    for (int64_t n = 0; n < N; ++n) dE[int64_t(tokens[n]) * d + j] += dx[n * d + j];
}

template void embedding_forward<float>(float*, const int32_t*, const float*, int64_t, int);
template void embedding_forward<double>(double*, const int32_t*, const double*, int64_t, int);
template void embedding_backward<float>(float*, const int32_t*, const float*, int64_t, int);
template void embedding_backward<double>(double*, const int32_t*, const double*, int64_t, int);

}  // namespace db::cpu
