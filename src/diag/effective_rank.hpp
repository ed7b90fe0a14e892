// Effective rank (Roy & Vetterli 2007; diagnostics.md §4): exp of the Shannon entropy of the
// L1-normalised singular values, computed in float64. The singular values of the small n×n
// stream maps come from a one-sided Jacobi SVD (exact to rounding for n ≤ 8, no LAPACK).
#pragma once
#include <vector>

namespace db::diag {

// Singular values of the row-major n×n matrix, in descending order.
std::vector<double> singular_values(const std::vector<double>& matrix, int n);

// exp(−Σ p_i log p_i), p = σ / Σσ. NaN for the zero matrix.
double effective_rank(const std::vector<double>& matrix, int n);

// For per-token maps A_0..A_{K−1} (each n×n row-major), the effective rank of every composed
// span A_i·A_{i+1}⋯A_j, i ≤ j, as a K×K row-major matrix (NaN for j < i). Products are
// rescaled by their largest entry at each step; the effective rank is scale invariant.
std::vector<double> span_effective_ranks(const std::vector<const double*>& maps, int n);

}  // namespace db::diag
