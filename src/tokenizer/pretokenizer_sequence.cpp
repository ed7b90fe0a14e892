#include "tokenizer/pretokenizer_sequence.hpp"

#include "tokenizer/pretokenizer.hpp"

namespace db::tokenizer {

PreTokenizerSequence::PreTokenizerSequence(const PreTokenizerConfig& config)
    : byte_level_regex_(config.byte_level_regex) {
  for (const SplitStep& step : config.splits)
    splits_.emplace_back(step.pattern, step.is_regex, step.behavior, step.invert);
}

void PreTokenizerSequence::run(std::string_view text, std::vector<std::string_view>& pieces) {
  pieces.clear();
  if (text.empty()) return;
  pieces.push_back(text);
  for (RegexSplit& split : splits_) {
    scratch_.clear();
    for (std::string_view piece : pieces) split.split(piece, scratch_);
    pieces.swap(scratch_);
  }
  if (byte_level_regex_) {
    scratch_.clear();
    for (std::string_view piece : pieces) pretokenize_gpt2(piece, scratch_);
    pieces.swap(scratch_);
  }
}

}  // namespace db::tokenizer
