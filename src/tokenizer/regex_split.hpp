// The `Split` pre-tokenizer of Hugging Face tokenizers (Llama-3, Qwen, GPT-4o, DeepSeek, OLMo-2):
// a regular expression finds matches in a piece of text, and `behavior` says what happens to the
// matches (the "delimiters") and the text between them. With `invert`, the text between matches
// is the delimiter instead. The expressions are written for Oniguruma (the regex engine of the
// Rust crate); ICU's engine runs them after one translation: Oniguruma's \s and \S mean the
// Unicode White_Space property, ICU's \s lacks U+000B and U+0085, so they are spelled out.
#pragma once
#include <unicode/regex.h>
#include <unicode/unistr.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace db::tokenizer {

// The names are those of tokenizer.json ("Removed", "Isolated", ...).
enum class SplitBehavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };
SplitBehavior parse_split_behavior(const std::string& name);  // throws db::Error

// An Oniguruma expression rewritten for ICU (\s -> \p{White_Space}, \S -> \P{White_Space}).
std::string oniguruma_to_icu(std::string_view pattern);

class RegexSplit {
 public:
  // `pattern` is a regular expression when `is_regex`, else a literal string (tokenizer.json
  // "Regex" or "String"). Throws db::Error with ICU's message when it does not compile.
  RegexSplit(const std::string& pattern, bool is_regex, SplitBehavior behavior, bool invert);
  RegexSplit(RegexSplit&&) noexcept;
  ~RegexSplit();

  // Appends the non-empty pieces of `text` (valid UTF-8) to `pieces`, as views into `text`.
  void split(std::string_view text, std::vector<std::string_view>& pieces);

 private:
  struct Range {
    size_t begin, end;
    bool delimiter;
  };
  void find_ranges(std::string_view text);

  std::unique_ptr<icu::RegexPattern> pattern_;
  std::unique_ptr<icu::RegexMatcher> matcher_;
  SplitBehavior behavior_;
  bool invert_;
  icu::UnicodeString utf16_;   // the text the matcher runs on
  std::vector<Range> ranges_;  // scratch: matches and gaps, in order, tiling the text
};

}  // namespace db::tokenizer
