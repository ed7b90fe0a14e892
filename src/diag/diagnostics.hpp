// The diagnostics of diagnostics.md, one file each; diagnose.cpp runs them in this order.
#pragma once
#include <vector>

#include "diag/context.hpp"

namespace db::diag {

Diagnostic angular_distance_diagnostic();   // §1
Diagnostic causal_score_diagnostic();       // §2
Diagnostic permutation_score_diagnostic();  // §3
Diagnostic path_weights_diagnostic();       // §4 (path weights, effective rank, dead segment)
Diagnostic pruning_diagnostic();            // §5
Diagnostic logitlens_diagnostic();          // §6
Diagnostic domain_nll_diagnostic();         // §7

const std::vector<Diagnostic>& all_diagnostics();

// "Last three quarters" summary (§2, §3): the share of finite entries (i, j), ⌊n/4⌋ ≤ i < j,
// of an n×n matrix exceeding the threshold; NaN when there is none.
double late_share(const std::vector<double>& matrix, int n, double threshold);

}  // namespace db::diag
