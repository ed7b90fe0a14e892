// Token embedding lookup (spec §0: no scaling, no norm).
#pragma once
#include <cstdint>

namespace db::cpu {

template <class T>
void embedding_forward(T* x, const int32_t* tokens, const T* E, int64_t N, int d);

// dE[token] += dx[row] for every row.
template <class T>
void embedding_backward(T* dE, const int32_t* tokens, const T* dx, int64_t N, int d);

}  // namespace db::cpu
