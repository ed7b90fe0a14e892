#include "util/json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"
#include "util/utf8.hpp"

namespace db {
namespace {

constexpr int kMaxDepth = 512;

struct ParseFailure {
  std::string reason;
  size_t offset;
};

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  JsonValue parse_document() {
    skip_whitespace();
    JsonValue value = parse_value(0);
    skip_whitespace();
    if (pos_ != text_.size()) fail("unexpected trailing characters");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& reason) const { throw ParseFailure{reason, pos_}; }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_whitespace() {
    while (!at_end()) {
      char c = text_[pos_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++pos_;
    }
  }

  void expect_literal(std::string_view literal) {
    if (text_.substr(pos_, literal.size()) != literal) fail("invalid literal");
    pos_ += literal.size();
  }

  JsonValue parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting too deep");
    if (at_end()) fail("unexpected end of input");
    switch (peek()) {
      case '{':
        return parse_object(depth);
      case '[':
        return parse_array(depth);
      case '"':
        return JsonValue(parse_string());
      case 't':
        expect_literal("true");
        return JsonValue(true);
      case 'f':
        expect_literal("false");
        return JsonValue(false);
      case 'n':
        expect_literal("null");
        return JsonValue();
      default:
        return JsonValue(parse_number());
    }
  }

  JsonValue parse_object(int depth) {
    ++pos_;  // '{'
    JsonObject object;
    skip_whitespace();
    if (peek() == '}') {
      ++pos_;
      return JsonValue(std::move(object));
    }
    while (true) {
      skip_whitespace();
      if (peek() != '"') fail("expected a string key");
      std::string key = parse_string();
      skip_whitespace();
      if (peek() != ':') fail("expected ':'");
      ++pos_;
      skip_whitespace();
      // RFC 8259 leaves duplicate keys open; like Python's json, the last one wins.
      object.insert_or_assign(std::move(key), parse_value(depth + 1));
      skip_whitespace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return JsonValue(std::move(object));
      }
      fail("expected ',' or '}'");
    }
  }

  JsonValue parse_array(int depth) {
    ++pos_;  // '['
    JsonArray array;
    skip_whitespace();
    if (peek() == ']') {
      ++pos_;
      return JsonValue(std::move(array));
    }
    while (true) {
      skip_whitespace();
      array.push_back(parse_value(depth + 1));
      skip_whitespace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return JsonValue(std::move(array));
      }
      fail("expected ',' or ']'");
    }
  }

  unsigned parse_hex4() {
    if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
    unsigned value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      value <<= 4;
      if (c >= '0' && c <= '9')
        value |= c - '0';
      else if (c >= 'a' && c <= 'f')
        value |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F')
        value |= c - 'A' + 10;
      else
        fail("invalid hex digit in \\u escape");
    }
    return value;
  }

  std::string parse_string() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string");
      // Copy the run of plain bytes at once: this is the hot loop for JSONL corpora.
      size_t start = pos_;
      while (pos_ < text_.size()) {
        unsigned char c = text_[pos_];
        if (c == '"' || c == '\\' || c < 0x20) break;
        ++pos_;
      }
      out.append(text_.data() + start, pos_ - start);
      if (at_end()) fail("unterminated string");
      unsigned char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("control character in string");
      ++pos_;  // backslash
      if (at_end()) fail("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned code = parse_hex4();
          if (code >= 0xD800 && code <= 0xDBFF) {
            // A high surrogate must be followed by an escaped low surrogate to form one code
            // point; anything else leaves it lone.
            if (text_.substr(pos_, 2) == "\\u") {
              size_t saved = pos_;
              pos_ += 2;
              unsigned low = parse_hex4();
              if (low >= 0xDC00 && low <= 0xDFFF) {
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
              } else {
                pos_ = saved;
                code = kReplacementCharacter;
              }
            } else {
              code = kReplacementCharacter;
            }
          } else if (code >= 0xDC00 && code <= 0xDFFF) {
            code = kReplacementCharacter;
          }
          append_utf8(out, code);
          break;
        }
        default:
          --pos_;
          fail("invalid escape");
      }
    }
  }

  double parse_number() {
    size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      fail("unexpected character");
    }
    if (peek() == '.') {
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("digit expected after '.'");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) fail("digit expected in exponent");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    // strtod needs a terminated buffer; numbers are short.
    std::string digits(text_.substr(start, pos_ - start));
    return std::strtod(digits.c_str(), nullptr);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

[[noreturn]] void wrong_kind(const char* what, const char* expected) {
  DB_REQUIRE(false, std::string("JSON: ") + what + " must be " + expected);
  std::abort();
}

}  // namespace

bool JsonValue::as_bool(const char* what) const {
  if (!is_bool()) wrong_kind(what, "a boolean");
  return std::get<bool>(data_);
}

double JsonValue::as_number(const char* what) const {
  if (!is_number()) wrong_kind(what, "a number");
  return std::get<double>(data_);
}

long long JsonValue::as_integer(const char* what, long long min, long long max) const {
  double d = as_number(what);
  DB_REQUIRE(std::floor(d) == d && d >= static_cast<double>(min) && d <= static_cast<double>(max),
             std::string("JSON: ") + what + " must be an integer in [" + std::to_string(min) +
                 ", " + std::to_string(max) + "]");
  return static_cast<long long>(d);
}

const std::string& JsonValue::as_string(const char* what) const {
  if (!is_string()) wrong_kind(what, "a string");
  return std::get<std::string>(data_);
}

const JsonArray& JsonValue::as_array(const char* what) const {
  if (!is_array()) wrong_kind(what, "an array");
  return *std::get<std::shared_ptr<JsonArray>>(data_);
}

const JsonObject& JsonValue::as_object(const char* what) const {
  if (!is_object()) wrong_kind(what, "an object");
  return *std::get<std::shared_ptr<JsonObject>>(data_);
}

const JsonValue* JsonValue::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  const JsonObject& object = *std::get<std::shared_ptr<JsonObject>>(data_);
  auto it = object.find(key);
  return it == object.end() ? nullptr : &it->second;
}

bool try_parse_json(std::string_view text, JsonValue& value, std::string& error) {
  try {
    value = Parser(text).parse_document();
    return true;
  } catch (const ParseFailure& failure) {
    error = failure.reason + " at byte " + std::to_string(failure.offset);
    return false;
  }
}

JsonValue parse_json(std::string_view text) {
  JsonValue value;
  std::string error;
  DB_REQUIRE(try_parse_json(text, value, error), "JSON: " + error);
  return value;
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

std::string json_quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", unsigned(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace db
