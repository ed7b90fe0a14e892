// The byte <-> character table of byte-level BPE (GPT-2 `bytes_to_unicode`): every byte maps to
// one printable code point, so vocabulary files store arbitrary byte strings as text. The 188
// printable Latin-1 bytes map to themselves, the other 68 to U+0100 onwards in byte order.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace db::tokenizer {

// The code point that stands for `byte` in vocabulary files.
char32_t byte_to_char(unsigned char byte);

// The raw bytes of a vocabulary entry written with the table above (UTF-8 text). Empty optional
// when a character is not one of the 256 table characters.
std::optional<std::string> vocab_text_to_bytes(std::string_view vocab_text);

// The vocabulary-file spelling of raw bytes (inverse of vocab_text_to_bytes).
std::string bytes_to_vocab_text(std::string_view bytes);

}  // namespace db::tokenizer
