// A model config as the JSON text the PyTorch reference reads (tests/reference/README.md,
// "Config keys"): the shape and every design option of the config.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "model/model_config.hpp"
#include "model/residual/registry.hpp"

namespace db::test {

// A design option as JSON: booleans and numbers unquoted; "auto" or empty (a default derived
// from the shape, e.g. keel_alpha = 2L) is null, the reference's "derived" marker.
inline std::string json_value(const std::string& v) {
  if (v.empty() || v == "auto") return "null";
  if (v == "true" || v == "false") return v;
  char* end = nullptr;
  std::strtod(v.c_str(), &end);
  if (end && *end == '\0') return v;
  return "\"" + v + "\"";
}

inline std::string reference_config_json(const ModelConfig& c) {
  std::string json = "{\"arch\": \"" + c.arch + "\", \"n_layer\": " + std::to_string(c.n_layer) +
                     ", \"d_model\": " + std::to_string(c.d_model) +
                     ", \"n_head\": " + std::to_string(c.n_head) +
                     ", \"n_kv_head\": " + std::to_string(c.kv_heads()) +
                     ", \"ff\": " + std::to_string(c.ff_dim()) +
                     ", \"vocab_size\": " + std::to_string(c.vocab_size) +
                     ", \"qk_norm\": " + (c.qk_norm ? "true" : "false") +
                     ", \"norm_eps\": 1e-6, \"rope_theta\": 10000";
  for (const DesignOption& o : find_design(c.arch).options)
    json += ", \"" + o.key + "\": " + json_value(c.option(o.key, o.default_value));
  return json + "}";
}

// Whether the PyTorch reference implements the design (`depthbench_reference.py designs`). The
// agreement tests skip a design it does not (a new design before its reference is written) and
// print that they did, so that a design added in one file keeps the suite green.
inline bool reference_implements(const std::string& design) {
  static const std::set<std::string> known = [] {
    std::set<std::string> names;
    const std::string command = std::string(DEPTHBENCH_PYTHON) + " " + DEPTHBENCH_SOURCE_DIR +
                                "/tests/reference/depthbench_reference.py designs";
    FILE* out = ::popen(command.c_str(), "r");
    if (!out) return names;
    char line[256];
    while (std::fgets(line, sizeof line, out)) {
      std::string name(line);
      while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
      if (!name.empty()) names.insert(name);
    }
    ::pclose(out);
    return names;
  }();
  if (known.count(design)) return true;
  std::printf("skipped: the PyTorch reference has no design '%s' (tests/reference)\n",
              design.c_str());
  return false;
}

}  // namespace db::test
