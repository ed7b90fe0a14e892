#include "io/model_fields.hpp"

#include <cmath>
#include <cstdlib>

#include "core/error.hpp"
#include "core/format.hpp"
#include "model/residual/registry.hpp"
#include "util/json.hpp"

namespace db {
namespace {

// Design options from "key=value;key=value" (design_options_text).
std::map<std::string, std::string> parse_design_options(const std::string& text) {
  std::map<std::string, std::string> options;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find(';', start), text.size());
    const std::string item = text.substr(start, end - start);
    const size_t eq = item.find('=');
    if (eq != std::string::npos) options[item.substr(0, eq)] = item.substr(eq + 1);
    start = end + 1;
  }
  return options;
}

// A design option's text as the JSON value it stands for.
std::string option_json(const std::string& text) {
  if (text == "true" || text == "false") return text;
  if (text.empty() || text == "null") return "null";
  char* end = nullptr;
  const double number = std::strtod(text.c_str(), &end);
  const bool decimal = text.find_first_of("xXnN") == std::string::npos;  // no hex, inf, nan
  if (decimal && end == text.c_str() + text.size() && std::isfinite(number))
    return exact_number_text(number);
  return json_quote(text);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> model_json_members(const ModelConfig& m) {
  std::vector<std::pair<std::string, std::string>> members;
  for (const ModelField& field : model_fields(m)) {
    std::string json;
    if (field.key == "design_options") {
      for (const DesignOption& o : find_design(m.arch).options)
        json += std::string(json.empty() ? "" : ", ") + json_quote(o.key) + ": " +
                option_json(m.option(o.key, o.default_value));
      json = "{" + json + "}";
    } else if (field.key == "qk_norm" || field.key == "tie_embeddings") {
      json = std::get<int64_t>(field.value) ? "true" : "false";
    } else if (const auto* text = std::get_if<std::string>(&field.value)) {
      json = json_quote(*text);
    } else {
      json = field_text(field.value);
    }
    members.emplace_back(field.key, json);
  }
  return members;
}

std::vector<ModelField> model_fields(const ModelConfig& m) {
  return {
      {"arch", m.arch},
      {"design_options", design_options_text(m)},
      {"d_model", int64_t(m.d_model)},
      {"n_layer", int64_t(m.n_layer)},
      {"n_head", int64_t(m.n_head)},
      {"n_kv_head", int64_t(m.kv_heads())},
      {"head_dim", int64_t(m.head_dim())},
      {"ff", int64_t(m.ff_dim())},
      {"vocab_size", int64_t(m.vocab_size)},
      {"qk_norm", int64_t(m.qk_norm ? 1 : 0)},
      {"tie_embeddings", int64_t(m.tie_embeddings ? 1 : 0)},
      {"rope_theta", m.rope_theta},
      {"norm_eps", m.norm_eps},
  };
}

ModelConfig model_from_fields(const FieldGetter& get, const std::string& source) {
  auto required = [&](const std::string& key, const FieldValue& kind) {
    const std::optional<FieldValue> value = get(key, kind);
    DB_REQUIRE(value.has_value(), source + " has no model field '" + key + "'");
    return *value;
  };
  auto text = [&](const char* key) { return std::get<std::string>(required(key, std::string())); };
  auto integer = [&](const char* key) { return int(std::get<int64_t>(required(key, int64_t(0)))); };
  ModelConfig m;
  m.arch = text("arch");
  m.design_options = parse_design_options(text("design_options"));
  m.d_model = integer("d_model");
  m.n_layer = integer("n_layer");
  m.n_head = integer("n_head");
  m.n_kv_head = integer("n_kv_head");
  m.ff = integer("ff");
  m.vocab_size = integer("vocab_size");
  m.qk_norm = integer("qk_norm") != 0;
  const std::optional<FieldValue> tied = get("tie_embeddings", int64_t(0));
  m.tie_embeddings = tied && std::get<int64_t>(*tied) != 0;
  m.rope_theta = std::get<double>(required("rope_theta", 0.0));
  m.norm_eps = std::get<double>(required("norm_eps", 0.0));
  const int head_dim = integer("head_dim");
  DB_REQUIRE(m.n_head >= 1, source + ": n_head must be ≥ 1");
  if (m.d_model % m.n_head != 0 || head_dim != m.d_model / m.n_head) m.head_size = head_dim;
  m.validate();
  return m;
}

std::string field_text(const FieldValue& value) {
  if (const auto* s = std::get_if<std::string>(&value)) return *s;
  if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
  return exact_number_text(std::get<double>(value));
}

FieldValue parse_field(const std::string& text, const FieldValue& kind, const std::string& what) {
  if (std::holds_alternative<std::string>(kind)) return text;
  try {
    size_t used = 0;
    if (std::holds_alternative<int64_t>(kind)) {
      const int64_t value = std::stoll(text, &used);
      if (used == text.size()) return value;
    } else {
      const double value = std::stod(text, &used);
      if (used == text.size()) return value;
    }
  } catch (const std::exception&) {
  }
  throw Error(what + " = '" + text + "' is not a number");
}

}  // namespace db
