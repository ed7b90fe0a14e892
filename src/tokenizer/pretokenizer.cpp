#include "tokenizer/pretokenizer.hpp"

#include <unicode/uchar.h>

#include <array>

#include "util/utf8.hpp"

namespace db::tokenizer {
namespace {

// Every code point falls in exactly one class: letters (L), numbers (N), White_Space, other.
enum class CharClass : unsigned char { letter, number, space, other };

CharClass classify_slow(char32_t c) {
  if (u_isUWhiteSpace(static_cast<UChar32>(c))) return CharClass::space;
  uint32_t mask = U_GET_GC_MASK(static_cast<UChar32>(c));
  if (mask & U_GC_L_MASK) return CharClass::letter;
  if (mask & U_GC_N_MASK) return CharClass::number;
  return CharClass::other;
}

const std::array<CharClass, 128>& ascii_classes() {
  static const std::array<CharClass, 128> table = [] {
    std::array<CharClass, 128> t{};
    for (char32_t c = 0; c < 128; ++c) t[c] = classify_slow(c);
    return t;
  }();
  return table;
}

inline CharClass classify(char32_t c) {
  return c < 128 ? ascii_classes()[c] : classify_slow(c);
}

// Cursor over the code points of valid UTF-8 text with one code point of lookahead.
struct Cursor {
  std::string_view text;
  size_t pos = 0;

  bool at_end(size_t p) const { return p >= text.size(); }
  // The class of the code point at byte offset p; `next` receives the following offset.
  CharClass class_at(size_t p, size_t& next) const {
    unsigned char b = text[p];
    if (b < 0x80) {
      next = p + 1;
      return ascii_classes()[b];
    }
    next = p;
    return classify(next_code_point(text, next));
  }
  // End of the run of class `cls` starting at p.
  size_t run_end(size_t p, CharClass cls) const {
    size_t next = p;
    while (!at_end(p) && class_at(p, next) == cls) p = next;
    return p;
  }
};

// Length of a contraction ('s 't 're 've 'm 'll 'd) at p, or 0.
size_t contraction_length(std::string_view text, size_t p) {
  if (text[p] != '\'' || p + 1 >= text.size()) return 0;
  char a = text[p + 1];
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (p + 2 >= text.size()) return 0;
  char b = text[p + 2];
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

}  // namespace

void pretokenize_gpt2(std::string_view text, std::vector<std::string_view>& pieces) {
  Cursor cursor{text};
  size_t p = 0;
  while (p < text.size()) {
    // Alternatives in the order the expression tries them (leftmost-first semantics).
    size_t length = contraction_length(text, p);
    if (length) {
      pieces.push_back(text.substr(p, length));
      p += length;
      continue;
    }
    size_t after = 0;
    CharClass cls = cursor.class_at(p, after);
    // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": an optional single space, then a run.
    if (text[p] == ' ' && after < text.size()) {
      size_t after2 = 0;
      CharClass next_cls = cursor.class_at(after, after2);
      if (next_cls != CharClass::space) {
        size_t end = cursor.run_end(after, next_cls);
        pieces.push_back(text.substr(p, end - p));
        p = end;
        continue;
      }
    }
    if (cls != CharClass::space) {
      size_t end = cursor.run_end(p, cls);
      pieces.push_back(text.substr(p, end - p));
      p = end;
      continue;
    }
    // "\s+(?!\S)": the whitespace run, less its last character when a non-space follows and
    // the run is longer than one; otherwise "\s+" takes the single character.
    size_t end = cursor.run_end(p, CharClass::space);
    if (end < text.size()) {
      // Step back one code point (continuation bytes are 10xxxxxx).
      size_t last = end - 1;
      while (last > p && (static_cast<unsigned char>(text[last]) & 0xC0) == 0x80) --last;
      if (last > p) end = last;
    }
    pieces.push_back(text.substr(p, end - p));
    p = end;
  }
}

}  // namespace db::tokenizer
