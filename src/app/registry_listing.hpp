// `depthbench designs`: the design registry as its entries describe themselves, as text for
// people and as JSON for programs (the postprocess takes display names and order from it).
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

}  // namespace db::app
