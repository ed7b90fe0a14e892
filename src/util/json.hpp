// A small, strict JSON reader (RFC 8259) for tokenizer files and JSONL corpora: no dependency,
// errors carry the byte offset. Strings are returned as UTF-8; \uXXXX escapes (surrogate pairs
// included) are decoded, a lone surrogate becomes U+FFFD. Raw bytes inside strings are passed
// through unchanged (UTF-8 validity is checked later, where the text is tokenized).
#pragma once
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace db {

class JsonValue;
using JsonArray = std::vector<JsonValue>;
using JsonObject = std::map<std::string, JsonValue, std::less<>>;

class JsonValue {
 public:
  enum class Kind { null, boolean, number, string, array, object };

  JsonValue() = default;
  explicit JsonValue(bool b) : data_(b) {}
  explicit JsonValue(double d) : data_(d) {}
  explicit JsonValue(std::string s) : data_(std::move(s)) {}
  explicit JsonValue(JsonArray a) : data_(std::make_shared<JsonArray>(std::move(a))) {}
  explicit JsonValue(JsonObject o) : data_(std::make_shared<JsonObject>(std::move(o))) {}

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_null() const { return kind() == Kind::null; }
  bool is_bool() const { return kind() == Kind::boolean; }
  bool is_number() const { return kind() == Kind::number; }
  bool is_string() const { return kind() == Kind::string; }
  bool is_array() const { return kind() == Kind::array; }
  bool is_object() const { return kind() == Kind::object; }

  // Accessors throw db::Error when the value has another kind; `what` names it in the message.
  bool as_bool(const char* what = "value") const;
  double as_number(const char* what = "value") const;
  // An integer-valued number within [min, max].
  long long as_integer(const char* what, long long min, long long max) const;
  const std::string& as_string(const char* what = "value") const;
  const JsonArray& as_array(const char* what = "value") const;
  const JsonObject& as_object(const char* what = "value") const;

  // Object member lookup: nullptr when this is not an object or the key is absent.
  const JsonValue* find(std::string_view key) const;

 private:
  std::variant<std::monostate, bool, double, std::string, std::shared_ptr<JsonArray>,
               std::shared_ptr<JsonObject>>
      data_;
};

// Parses exactly one JSON value (surrounding whitespace allowed). Throws db::Error
// "JSON: <reason> at byte N" on malformed input. Nesting deeper than 512 levels is rejected.
JsonValue parse_json(std::string_view text);

// Like parse_json, but returns false and fills `error` instead of throwing (JSONL lines).
bool try_parse_json(std::string_view text, JsonValue& value, std::string& error);

// `text` as a JSON string literal, quotes included (for the few files we write as JSON).
std::string json_quote(std::string_view text);
// `value` as a JSON number that reads back exactly (%.17g); null when it is NaN or infinite,
// which JSON cannot spell.
std::string json_number(double value);

}  // namespace db
