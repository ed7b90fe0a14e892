// UTF-8 helpers shared by the JSON reader, the pre-tokenizer and the corpus reader.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace db {

inline constexpr char32_t kReplacementCharacter = 0xFFFD;

void append_utf8(std::string& out, char32_t code_point);

// Decodes the code point at `text[pos]` of text known to be valid UTF-8 and advances `pos`.
char32_t next_code_point(std::string_view text, size_t& pos);

// Length of the well-formed UTF-8 sequence starting at text[pos] (Unicode Table 3-7), or 0
// when the bytes there are not a well-formed sequence.
size_t well_formed_length(std::string_view text, size_t pos);

bool is_valid_utf8(std::string_view text);

// Replaces every ill-formed subsequence by U+FFFD using the "maximal subpart" rule of Unicode
// §3.9 (what Python's errors="replace" and the WHATWG TextDecoder do). Returns the number of
// replacement characters inserted.
size_t repair_utf8(std::string_view text, std::string& out);

}  // namespace db
