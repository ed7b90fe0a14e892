// `depthbench designs` and `depthbench diagnose --list`: the design registry and the
// diagnostics as their entries describe themselves, as text for people and as JSON for programs
// (the postprocess takes display names and order from the first; its tests check its dataset
// names against the second).
#pragma once
#include <string>

namespace db::app {

// The shape at which `state_values_per_token_block` is evaluated in the listing.
inline constexpr int kListingDModel = 1024;
inline constexpr int kListingHeads = 16;

// {"schema": 1, "designs": [{"name", "title", "order", "summary", "options": [{"key",
// "default", "help", "kind", "min", "max", "min_exclusive", "words", "values"}], "no_decay",
// "state_values_per_token_block"}, ...]} in registry order (doc/designs.md).
std::string designs_json();
std::string designs_text();

// {"schema": 1, "diagnostics": [{"name", "summary", "options": [{"flag", "default", "help"}],
// "datasets", "interval_suffixes": ["_ci_low", "_ci_high"]}, ...]} in the order diagnose runs
// them (doc/diagnostics.md).
std::string diagnostics_json();
std::string diagnostics_text();

}  // namespace db::app
