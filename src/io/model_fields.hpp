// The model config as named values (doc/hdf5-schema.md "Weight and checkpoint files"): the same
// keys are the attributes of weight files and the `__metadata__` of safetensors exports, so a
// loader derives every tensor shape from either file alone (doc/parameters.md).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "model/model_config.hpp"

namespace db {

using FieldValue = std::variant<std::string, int64_t, double>;

struct ModelField {
  std::string key;
  FieldValue value;
};

// The resolved config (n_kv_head, ff, head_dim as used; booleans as 0/1).
std::vector<ModelField> model_fields(const ModelConfig& config);

// The config back from its fields. `get(key, kind)` returns the stored value converted to the
// kind of `kind`, or nothing when the key is absent; tie_embeddings may be absent (older files:
// untied), every other key must be present. Throws db::Error naming `source` and the key.
using FieldGetter =
    std::function<std::optional<FieldValue>(const std::string& key, const FieldValue& kind)>;
ModelConfig model_from_fields(const FieldGetter& get, const std::string& source);

// The same fields as typed JSON members of a config.json, (key, JSON text) in the order above:
// qk_norm and tie_embeddings as booleans, design_options as an object whose values are
// booleans, numbers, null (an empty value: derived) or strings ("auto", "layernorm").
std::vector<std::pair<std::string, std::string>> model_json_members(const ModelConfig& config);

// Field values as text (safetensors metadata holds strings only) and back; numbers round-trip
// exactly.
std::string field_text(const FieldValue& value);
FieldValue parse_field(const std::string& text, const FieldValue& kind, const std::string& what);

}  // namespace db
