#include "model/model_config.hpp"

#include "core/error.hpp"

namespace db {

double ModelConfig::option(const std::string& key, double fallback) const {
  auto it = design_options.find(key);
  if (it == design_options.end()) return fallback;
  try {
    return std::stod(it->second);
  } catch (const std::exception&) {
    throw Error("design option " + key + " = '" + it->second + "' is not a number");
  }
}

std::string ModelConfig::option(const std::string& key, const std::string& fallback) const {
  auto it = design_options.find(key);
  return it == design_options.end() ? fallback : it->second;
}

bool ModelConfig::option(const std::string& key, bool fallback) const {
  auto it = design_options.find(key);
  if (it == design_options.end()) return fallback;
  if (it->second == "true" || it->second == "1") return true;
  if (it->second == "false" || it->second == "0") return false;
  throw Error("design option " + key + " = '" + it->second + "' is not true/false");
}

void ModelConfig::validate() const {
  DB_REQUIRE(n_layer >= 1, "n_layer must be ≥ 1");
  DB_REQUIRE(n_head >= 1 && (head_size > 0 || d_model % n_head == 0),
             "d_model (" + std::to_string(d_model) + ") must be a multiple of n_head (" +
                 std::to_string(n_head) + ")");
  DB_REQUIRE(head_dim() % 2 == 0, "head_dim = d_model / n_head must be even for RoPE");
  DB_REQUIRE(kv_heads() >= 1 && n_head % kv_heads() == 0, "n_head must be a multiple of n_kv_head");
  DB_REQUIRE(vocab_size >= 2, "vocab_size must be ≥ 2");
  DB_REQUIRE(ff_dim() >= 1, "ff must be ≥ 1");
}

}  // namespace db
