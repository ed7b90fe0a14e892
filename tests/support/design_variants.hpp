// Every registered design with its defaults, plus the design options that change which buffers
// a design keeps (its state): the cases of the model tests that must hold for every design and
// every state (recompute_test, bf16_storage_test).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "model/model_config.hpp"
#include "model/residual/registry.hpp"

namespace db::test {

struct Variant {
  std::string arch;
  std::map<std::string, std::string> options;
  std::string name() const {
    std::string n = arch;
    for (const auto& [key, value] : options) n += " " + key + "=" + value;
    return n;
  }
  // The small model these tests build: d = 32, 4 heads sharing 2 kv heads, 37 tokens.
  ModelConfig small_config(int n_layer = 4, bool qk_norm = true) const {
    ModelConfig c;
    c.arch = arch;
    c.design_options = options;
    c.n_layer = n_layer;
    c.d_model = 32;
    c.n_head = 4;
    c.n_kv_head = 2;
    c.qk_norm = qk_norm;
    c.vocab_size = 37;
    return c;
  }
};

inline std::vector<Variant> state_changing_variants() {
  std::vector<Variant> v;
  for (const DesignInfo& d : all_designs()) v.push_back({d.name, {}});
  v.push_back({"deepnorm", {{"deepnorm_norm", "rmsnorm"}}});
  v.push_back({"moda", {{"moda_post_norm", "true"}}});
  v.push_back({"moda", {{"moda_rope_depth_keys", "true"}}});
  v.push_back({"hc", {{"hc_readout", "sum_then_norm"}}});
  v.push_back({"attnres_block", {{"attnres_blocks", "3"}}});  // partial sums across blocks
  return v;
}

}  // namespace db::test
