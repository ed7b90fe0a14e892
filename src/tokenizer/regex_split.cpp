#include "tokenizer/regex_split.hpp"

#include <unicode/utf16.h>
#include <unicode/utf8.h>

#include <algorithm>

#include "core/error.hpp"

namespace db::tokenizer {

SplitBehavior parse_split_behavior(const std::string& name) {
  if (name == "Removed") return SplitBehavior::removed;
  if (name == "Isolated") return SplitBehavior::isolated;
  if (name == "MergedWithPrevious") return SplitBehavior::merged_with_previous;
  if (name == "MergedWithNext") return SplitBehavior::merged_with_next;
  if (name == "Contiguous") return SplitBehavior::contiguous;
  DB_REQUIRE(false, "Split behavior '" + name +
                        "' is unknown (Removed, Isolated, MergedWithPrevious, MergedWithNext, "
                        "Contiguous)");
  return SplitBehavior::isolated;
}

std::string oniguruma_to_icu(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char next = pattern[++i];  // an escape: both characters are consumed together
    if (next == 's')
      out += "\\p{White_Space}";
    else if (next == 'S')
      out += "\\P{White_Space}";
    else
      out += {'\\', next};
  }
  return out;
}

RegexSplit::RegexSplit(const std::string& pattern, bool is_regex, SplitBehavior behavior,
                       bool invert)
    : behavior_(behavior), invert_(invert) {
  // Oniguruma's (Ruby syntax) ^ and $ are line anchors that know only '\n', and its '.' excludes
  // only '\n': ICU's MULTILINE + UNIX_LINES mean the same.
  uint32_t flags = is_regex ? UREGEX_MULTILINE | UREGEX_UNIX_LINES : UREGEX_LITERAL;
  std::string source = is_regex ? oniguruma_to_icu(pattern) : pattern;
  UErrorCode status = U_ZERO_ERROR;
  UParseError where{};
  pattern_.reset(
      icu::RegexPattern::compile(icu::UnicodeString::fromUTF8(source), flags, where, status));
  DB_REQUIRE(U_SUCCESS(status), "Split pattern '" + pattern + "' does not compile (ICU " +
                                    u_errorName(status) + " at offset " +
                                    std::to_string(where.offset) + ")");
  matcher_.reset(pattern_->matcher(status));
  DB_REQUIRE(U_SUCCESS(status), std::string("ICU regex matcher: ") + u_errorName(status));
}

RegexSplit::RegexSplit(RegexSplit&&) noexcept = default;
RegexSplit::~RegexSplit() = default;

void RegexSplit::find_ranges(std::string_view text) {
  ranges_.clear();
  utf16_ = icu::UnicodeString::fromUTF8(
      icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  matcher_->reset(utf16_);
  // Matches come in increasing order: one cursor converts UTF-16 offsets to UTF-8 offsets.
  int32_t unit = 0;
  size_t byte = 0;
  auto to_byte = [&](int32_t target) {
    const char16_t* units = utf16_.getBuffer();
    while (unit < target) {
      UChar32 c;
      U16_NEXT(units, unit, target, c);
      byte += U8_LENGTH(c);
    }
    return byte;
  };
  size_t previous = 0;
  UErrorCode status = U_ZERO_ERROR;
  while (matcher_->find(status)) {
    int32_t start = matcher_->start(status), end = matcher_->end(status);
    DB_REQUIRE(U_SUCCESS(status), std::string("ICU regex: ") + u_errorName(status));
    size_t begin_byte = to_byte(start), end_byte = to_byte(end);
    if (begin_byte != previous) ranges_.push_back({previous, begin_byte, invert_});
    ranges_.push_back({begin_byte, end_byte, !invert_});  // empty matches split too, as in Rust
    previous = end_byte;
  }
  DB_REQUIRE(U_SUCCESS(status), std::string("ICU regex: ") + u_errorName(status));
  if (previous != text.size()) ranges_.push_back({previous, text.size(), invert_});
}

void RegexSplit::split(std::string_view text, std::vector<std::string_view>& pieces) {
  if (text.empty()) return;
  find_ranges(text);
  // Joins the ranges as Hugging Face's NormalizedString::split does; empty pieces are dropped.
  std::vector<Range> joined;
  joined.reserve(ranges_.size());
  bool previous_delimiter = false;
  auto extend_last = [&](const Range& r) {
    if (joined.empty())
      joined.push_back({r.begin, r.end, false});
    else
      joined.back().end = r.end;
  };
  switch (behavior_) {
    case SplitBehavior::removed:
      for (const Range& r : ranges_)
        if (!r.delimiter) joined.push_back(r);
      break;
    case SplitBehavior::isolated:
      joined = ranges_;
      break;
    case SplitBehavior::contiguous:
      for (const Range& r : ranges_) {
        if (r.delimiter == previous_delimiter)
          extend_last(r);
        else
          joined.push_back(r);
        previous_delimiter = r.delimiter;
      }
      break;
    case SplitBehavior::merged_with_previous:
      for (const Range& r : ranges_) {
        if (r.delimiter && !previous_delimiter)
          extend_last(r);
        else
          joined.push_back(r);
        previous_delimiter = r.delimiter;
      }
      break;
    case SplitBehavior::merged_with_next:
      // Walks backwards: a delimiter is prepended to the piece after it.
      for (auto r = ranges_.rbegin(); r != ranges_.rend(); ++r) {
        if (r->delimiter && !previous_delimiter) {
          if (joined.empty())
            joined.push_back(*r);
          else
            joined.back().begin = r->begin;
        } else {
          joined.push_back(*r);
        }
        previous_delimiter = r->delimiter;
      }
      std::reverse(joined.begin(), joined.end());
      break;
  }
  for (const Range& r : joined)
    if (r.end > r.begin) pieces.push_back(text.substr(r.begin, r.end - r.begin));
}

}  // namespace db::tokenizer
