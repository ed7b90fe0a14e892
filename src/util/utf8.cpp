#include "util/utf8.hpp"

namespace db {

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

char32_t next_code_point(std::string_view text, size_t& pos) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char b0 = byte(pos);
  if (b0 < 0x80) {
    ++pos;
    return b0;
  }
  if (b0 < 0xE0) {
    char32_t c = ((b0 & 0x1F) << 6) | (byte(pos + 1) & 0x3F);
    pos += 2;
    return c;
  }
  if (b0 < 0xF0) {
    char32_t c = ((b0 & 0x0F) << 12) | ((byte(pos + 1) & 0x3F) << 6) | (byte(pos + 2) & 0x3F);
    pos += 3;
    return c;
  }
  char32_t c = ((b0 & 0x07) << 18) | ((byte(pos + 1) & 0x3F) << 12) |
               ((byte(pos + 2) & 0x3F) << 6) | (byte(pos + 3) & 0x3F);
  pos += 4;
  return c;
}

namespace {

// Number of leading bytes of text[pos..] that form a prefix of some well-formed sequence
// (Table 3-7), and whether that prefix is complete.
size_t valid_prefix(std::string_view text, size_t pos, bool& complete) {
  auto at = [&](size_t i) -> int {
    return pos + i < text.size() ? static_cast<unsigned char>(text[pos + i]) : -1;
  };
  int b0 = at(0);
  complete = false;
  if (b0 < 0x80) {
    complete = true;
    return 1;
  }
  int need = 0, lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return 0;  // C0, C1, F5..FF, or a stray continuation byte
  }
  size_t length = 1;
  for (int k = 0; k < need; ++k) {
    int b = at(length);
    int low = k == 0 ? lo : 0x80, high = k == 0 ? hi : 0xBF;
    if (b < low || b > high) return length;
    ++length;
  }
  complete = true;
  return length;
}

}  // namespace

size_t well_formed_length(std::string_view text, size_t pos) {
  bool complete = false;
  size_t length = valid_prefix(text, pos, complete);
  return complete ? length : 0;
}

bool is_valid_utf8(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    // ASCII fast path, eight bytes at a time would be faster; this is not the bottleneck.
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    size_t length = well_formed_length(text, pos);
    if (length == 0) return false;
    pos += length;
  }
  return true;
}

size_t repair_utf8(std::string_view text, std::string& out) {
  out.clear();
  out.reserve(text.size());
  size_t replaced = 0, pos = 0;
  while (pos < text.size()) {
    bool complete = false;
    size_t length = valid_prefix(text, pos, complete);
    if (complete) {
      out.append(text.data() + pos, length);
      pos += length;
    } else {
      // A maximal subpart (at least one byte) becomes one replacement character.
      append_utf8(out, kReplacementCharacter);
      ++replaced;
      pos += length == 0 ? 1 : length;
    }
  }
  return replaced;
}

}  // namespace db
