#include "util/json_writer.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace db {
namespace {

std::string shortest_number(double value) {
  if (!std::isfinite(value)) return "null";  // JSON cannot spell NaN or infinity
  char text[32];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

}  // namespace

std::string json_text(const JsonValue& value, int indent) {
  const std::string inner(indent + 2, ' '), outer(indent, ' ');
  switch (value.kind()) {
    case JsonValue::Kind::null:
      return "null";
    case JsonValue::Kind::boolean:
      return value.as_bool() ? "true" : "false";
    case JsonValue::Kind::number:
      return shortest_number(value.as_number());
    case JsonValue::Kind::string:
      return json_quote(value.as_string());
    case JsonValue::Kind::array: {
      const JsonArray& items = value.as_array();
      if (items.empty()) return "[]";
      std::string text = "[";
      for (size_t i = 0; i < items.size(); ++i)
        text += (i ? ",\n" : "\n") + inner + json_text(items[i], indent + 2);
      return text + "\n" + outer + "]";
    }
    case JsonValue::Kind::object: {
      const JsonObject& members = value.as_object();
      if (members.empty()) return "{}";
      std::string text = "{";
      bool first = true;
      for (const auto& [key, member] : members) {
        text +=
            (first ? "\n" : ",\n") + inner + json_quote(key) + ": " + json_text(member, indent + 2);
        first = false;
      }
      return text + "\n" + outer + "}";
    }
  }
  return "null";
}

}  // namespace db
