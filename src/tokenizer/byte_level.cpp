#include "tokenizer/byte_level.hpp"

#include "util/utf8.hpp"

namespace db::tokenizer {
namespace {

struct ByteTable {
  std::array<char32_t, 256> to_char{};
  std::array<int, 512> to_byte{};  // every table character is below U+0200; -1: none

  ByteTable() {
    to_byte.fill(-1);
    auto printable = [](int b) {
      return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    };
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      to_char[b] = printable(b) ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
      to_byte[to_char[b]] = b;
    }
  }
};

const ByteTable& table() {
  static const ByteTable instance;
  return instance;
}

}  // namespace

char32_t byte_to_char(unsigned char byte) {
  return table().to_char[byte];
}

std::optional<std::string> vocab_text_to_bytes(std::string_view vocab_text) {
  std::string bytes;
  size_t pos = 0;
  while (pos < vocab_text.size()) {
    if (well_formed_length(vocab_text, pos) == 0) return std::nullopt;
    char32_t c = next_code_point(vocab_text, pos);
    if (c >= 512 || table().to_byte[c] < 0) return std::nullopt;
    bytes += static_cast<char>(table().to_byte[c]);
  }
  return bytes;
}

std::string bytes_to_vocab_text(std::string_view bytes) {
  std::string text;
  for (unsigned char b : bytes) append_utf8(text, byte_to_char(b));
  return text;
}

}  // namespace db::tokenizer
