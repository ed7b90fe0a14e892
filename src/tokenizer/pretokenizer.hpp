// GPT-2 pre-tokenization: the text is cut into pieces by the regular expression of OpenAI's
// encoder.py, and BPE runs inside each piece only:
//
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// \p{L} and \p{N} are Unicode general categories and \s is the Unicode White_Space property
// (as in Python's `regex` module, Rust's regex crate and tiktoken), all taken from ICU.
// `pretokenize_gpt2` is a hand-written matcher of that expression; `pretokenize_gpt2_ref` runs the
// expression itself through ICU's regex engine and is the reference the tests compare against.
#pragma once
#include <string_view>
#include <vector>

namespace db::tokenizer {

// Appends the pieces of `text` (valid UTF-8) to `pieces`; the pieces concatenate to `text`.
void pretokenize_gpt2(std::string_view text, std::vector<std::string_view>& pieces);

// Reference twin (slow): the same pieces through icu::RegexMatcher.
std::vector<std::string_view> pretokenize_gpt2_ref(std::string_view text);

}  // namespace db::tokenizer
