// Reference twin of pretokenize_gpt2: the GPT-2 expression run by ICU's regex engine. ICU's own
// \s is [\t\n\f\r\p{Z}], so the expression spells White_Space out to mean what Python's `regex`
// module means by \s.
#include <unicode/regex.h>
#include <unicode/unistr.h>

#include <memory>

#include "core/error.hpp"
#include "tokenizer/pretokenizer.hpp"

namespace db::tokenizer {

std::vector<std::string_view> pretokenize_gpt2_ref(std::string_view text) {
  static const char* kPattern =
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\p{White_Space}\\p{L}\\p{N}]+"
      "|\\p{White_Space}+(?!\\P{White_Space})|\\p{White_Space}+";
  UErrorCode status = U_ZERO_ERROR;
  icu::UnicodeString input = icu::UnicodeString::fromUTF8(
      icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  std::unique_ptr<icu::RegexMatcher> matcher(
      new icu::RegexMatcher(icu::UnicodeString::fromUTF8(kPattern), input, 0, status));
  DB_REQUIRE(U_SUCCESS(status), std::string("ICU regex: ") + u_errorName(status));
  std::vector<std::string_view> pieces;
  // Map UTF-16 match offsets back to UTF-8 byte offsets by re-encoding the prefix lengths.
  size_t byte_pos = 0;
  int32_t unit_pos = 0;
  auto advance_to = [&](int32_t unit) {
    std::string chunk;
    input.tempSubStringBetween(unit_pos, unit).toUTF8String(chunk);
    byte_pos += chunk.size();
    unit_pos = unit;
  };
  while (matcher->find(status)) {
    int32_t start = matcher->start(status), end = matcher->end(status);
    DB_REQUIRE(U_SUCCESS(status) && start == unit_pos, "ICU regex: pieces do not tile the text");
    size_t begin_byte = byte_pos;
    advance_to(end);
    pieces.push_back(text.substr(begin_byte, byte_pos - begin_byte));
  }
  return pieces;
}

}  // namespace db::tokenizer
