#include "tokenizer/pretokenizer_sequence.hpp"

#include "tokenizer/pretokenizer.hpp"

namespace db::tokenizer {

PreTokenizerSequence::PreTokenizerSequence(const PreTokenizerConfig& config)
    : byte_level_regex_(config.byte_level_regex),
      add_prefix_space_(config.add_prefix_space),
      metaspace_(config.metaspace) {
  for (const SplitStep& step : config.splits)
    splits_.emplace_back(step.pattern, step.is_regex, step.behavior, step.invert);
}

void PreTokenizerSequence::run(std::string_view text, std::vector<std::string_view>& pieces,
                               bool at_document_start) {
  pieces.clear();
  if (text.empty()) return;
  pieces.push_back(text);
  for (RegexSplit& split : splits_) {
    scratch_.clear();
    for (std::string_view piece : pieces) split.split(piece, scratch_);
    pieces.swap(scratch_);
  }
  if (add_prefix_space_) add_prefix_spaces(pieces);
  if (byte_level_regex_) {
    scratch_.clear();
    for (std::string_view piece : pieces) pretokenize_gpt2(piece, scratch_);
    pieces.swap(scratch_);
  }
  if (metaspace_) run_metaspace(text, at_document_start, pieces);
}

// Hugging Face's ByteLevel::pre_tokenize with add_prefix_space: a space before every piece the
// Split steps made (the whole text when there are none) that does not start with one.
void PreTokenizerSequence::add_prefix_spaces(std::vector<std::string_view>& pieces) {
  prefixed_text_.clear();
  prefixed_cut_.clear();
  for (std::string_view piece : pieces) {
    const size_t begin = prefixed_text_.size();
    if (!piece.starts_with(' ')) prefixed_text_ += ' ';
    prefixed_text_ += piece;
    prefixed_cut_.emplace_back(begin, prefixed_text_.size());
  }
  pieces.clear();  // the views are taken once the buffer no longer grows
  for (const auto& [begin, end] : prefixed_cut_)
    pieces.emplace_back(prefixed_text_.data() + begin, end - begin);
}

// Hugging Face's Metaspace::pre_tokenize, piece by piece.
void PreTokenizerSequence::run_metaspace(std::string_view text, bool at_document_start,
                                         std::vector<std::string_view>& pieces) {
  const std::string& mark = metaspace_->replacement;
  metaspace_text_.clear();
  metaspace_cut_.clear();
  for (std::string_view piece : pieces) {
    const size_t begin = metaspace_text_.size();
    const bool starts_with_mark = piece.substr(0, 1) == " " || piece.starts_with(mark);
    const bool first = at_document_start && piece.data() == text.data();
    if (!starts_with_mark && (metaspace_->prepend_scheme == PrependScheme::always ||
                              (metaspace_->prepend_scheme == PrependScheme::first && first)))
      metaspace_text_ += mark;
    for (char c : piece) {
      if (c == ' ')
        metaspace_text_ += mark;
      else
        metaspace_text_ += c;
    }
    const size_t end = metaspace_text_.size();
    if (!metaspace_->split) {
      metaspace_cut_.emplace_back(begin, end);
      continue;
    }
    // Split on the mark, MergedWithNext: each mark starts a new piece.
    size_t start = begin;
    for (size_t at = begin; at < end;) {
      if (at > start && metaspace_text_.compare(at, mark.size(), mark) == 0) {
        metaspace_cut_.emplace_back(start, at);
        start = at;
      }
      at += metaspace_text_.compare(at, mark.size(), mark) == 0 ? mark.size() : 1;
    }
    if (start < end) metaspace_cut_.emplace_back(start, end);
  }
  pieces.clear();
  for (auto [begin, end] : metaspace_cut_)
    pieces.push_back(std::string_view(metaspace_text_).substr(begin, end - begin));
}

}  // namespace db::tokenizer
