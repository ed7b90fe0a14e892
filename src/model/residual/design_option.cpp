#include "model/residual/design_option.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace db {
namespace {

bool listed(const std::vector<std::string>& words, const std::string& text) {
  return std::find(words.begin(), words.end(), text) != words.end();
}

std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

std::string quoted_words(const std::vector<std::string>& words, const char* separator) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : separator) + (w.empty() ? "''" : w);
  return out;
}

// A whole finite number, nothing after it (std::stod alone accepts "4x").
bool parse_number(const std::string& text, double& value) {
  try {
    size_t used = 0;
    value = std::stod(text, &used);
    return used == text.size() && std::isfinite(value);
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

OptionValues OptionValues::integer_at_least(double min, std::vector<std::string> words) {
  OptionValues v;
  v.kind = Kind::integer;
  v.min = min;
  v.words = std::move(words);
  return v;
}

OptionValues OptionValues::real_at_least(double min, std::vector<std::string> words) {
  OptionValues v;
  v.kind = Kind::real;
  v.min = min;
  v.words = std::move(words);
  return v;
}

OptionValues OptionValues::real_above(double min, std::vector<std::string> words) {
  OptionValues v = real_at_least(min, std::move(words));
  v.min_exclusive = true;
  return v;
}

OptionValues OptionValues::boolean() {
  OptionValues v;
  v.kind = Kind::boolean;
  v.words = {"true", "false"};
  return v;
}

OptionValues OptionValues::one_of(std::vector<std::string> words) {
  OptionValues v;
  v.kind = Kind::choice;
  v.words = std::move(words);
  return v;
}

const char* kind_name(OptionValues::Kind kind) {
  switch (kind) {
    case OptionValues::Kind::integer:
      return "integer";
    case OptionValues::Kind::real:
      return "real";
    case OptionValues::Kind::boolean:
      return "boolean";
    case OptionValues::Kind::choice:
      return "choice";
    case OptionValues::Kind::text:
      break;
  }
  return "text";
}

std::string describe_values(const OptionValues& v) {
  using Kind = OptionValues::Kind;
  if (v.kind == Kind::text) return "any text";
  if (v.kind == Kind::boolean || v.kind == Kind::choice) return quoted_words(v.words, " | ");
  std::string text = kind_name(v.kind);
  if (std::isfinite(v.min)) text += (v.min_exclusive ? " > " : " ≥ ") + number_text(v.min);
  if (std::isfinite(v.max)) text += (std::isfinite(v.min) ? ", ≤ " : " ≤ ") + number_text(v.max);
  if (!v.words.empty()) text += " or " + quoted_words(v.words, " or ");
  return text;
}

std::string option_value_problem(const DesignOption& option, const std::string& text) {
  using Kind = OptionValues::Kind;
  const OptionValues& v = option.values;
  if (v.kind == Kind::text || listed(v.words, text)) return "";
  // The config reader also takes 1 and 0 for a boolean (ModelConfig::option).
  if (v.kind == Kind::boolean && (text == "1" || text == "0")) return "";
  const std::string problem = "'" + text + "' is not valid: expected " + describe_values(v);
  if (v.kind == Kind::boolean || v.kind == Kind::choice) return problem;
  double value = 0;
  if (!parse_number(text, value)) return problem;
  if (v.kind == Kind::integer && value != std::floor(value)) return problem;
  const bool below = v.min_exclusive ? value <= v.min : value < v.min;
  if (below || value > v.max) return problem;
  return "";
}

}  // namespace db
