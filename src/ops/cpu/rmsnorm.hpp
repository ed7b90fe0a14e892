// RMSNorm (spec §0): y = g ⊙ x / sqrt(mean(x²) + eps), no bias; and the bias-free LayerNorm
// DeepNorm uses (spec §4 Choice): y = g ⊙ (x − mean) / sqrt(var + eps).
#pragma once
#include <cstdint>

namespace db::cpu {

// rstd[N] keeps 1/sqrt(mean(x²)+eps) per row for the backward pass. g may be null (gain 1).
template <class T>
void rmsnorm_forward(T* y, T* rstd, const T* x, const T* g, int64_t N, int d, double eps);

// dx is overwritten (added when accumulate_dx); dg += Σ_rows dy ⊙ x·rstd (skipped if null).
template <class T>
void rmsnorm_backward(T* dx, T* dg, const T* dy, const T* x, const T* g, const T* rstd, int64_t N,
                      int d, bool accumulate_dx = false);

// sum = alpha·x + branch (sum may be branch), then y = the norm of sum: the bits of axpby and
// the norm's forward, a row at a time (ops.hpp, add_rmsnorm_forward).
template <class T>
void add_rmsnorm_forward(T* sum, T* y, T* rstd, const T* x, const T* branch, T alpha, const T* g,
                         int64_t N, int d, double eps);
template <class T>
void add_layernorm_forward(T* sum, T* y, T* mean, T* rstd, const T* x, const T* branch, T alpha,
                           const T* g, int64_t N, int d, double eps);

template <class T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* g, int64_t N, int d,
                       double eps);
template <class T>
void layernorm_backward(T* dx, T* dg, const T* dy, const T* x, const T* g, const T* mean,
                        const T* rstd, int64_t N, int d, bool accumulate_dx = false);

}  // namespace db::cpu
