// The pre-tokenizer of a byte-level BPE as tokenizer.json describes it: zero or more `Split`
// steps (each cuts every piece further), then `ByteLevel`, which with use_regex=true cuts once
// more with the GPT-2 expression (GPT-2, GPT-NeoX) and with use_regex=false leaves the pieces as
// they are (Llama-3, Qwen). The byte-to-character mapping of ByteLevel needs no step here: the
// BPE model works on raw bytes.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/regex_split.hpp"

namespace db::tokenizer {

struct SplitStep {
  std::string pattern;
  bool is_regex = true;  // false: a literal string
  SplitBehavior behavior = SplitBehavior::isolated;
  bool invert = false;
};

struct PreTokenizerConfig {
  std::vector<SplitStep> splits;  // in order, before ByteLevel
  bool byte_level_regex = true;   // ByteLevel use_regex
};

class PreTokenizerSequence {
 public:
  explicit PreTokenizerSequence(const PreTokenizerConfig& config);  // compiles the expressions

  // Replaces `pieces` by the pre-tokens of `text` (valid UTF-8), as views into `text`.
  void run(std::string_view text, std::vector<std::string_view>& pieces);

 private:
  std::vector<RegexSplit> splits_;
  bool byte_level_regex_;
  std::vector<std::string_view> scratch_;
};

}  // namespace db::tokenizer
