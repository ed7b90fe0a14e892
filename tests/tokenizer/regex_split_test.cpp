#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE split pre - tokenizer
#include "tokenizer/regex_split.hpp"

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tokenizer/pretokenizer_sequence.hpp"

using namespace db::tokenizer;
using Pieces = std::vector<std::string>;

namespace {
// The Split expressions of Llama-3 and Qwen2/3 tokenizer.json files (Qwen: single digits).
const std::string kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwen =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

Pieces split(const std::string& pattern, const std::string& text,
             SplitBehavior behavior = SplitBehavior::isolated, bool invert = false,
             bool is_regex = true) {
  RegexSplit splitter(pattern, is_regex, behavior, invert);
  std::vector<std::string_view> views;
  splitter.split(text, views);
  return Pieces(views.begin(), views.end());
}
}  // namespace

BOOST_AUTO_TEST_CASE(whitespace_escapes_become_the_unicode_white_space_property) {
  BOOST_TEST(oniguruma_to_icu(R"(\s+(?!\S))") == R"(\p{White_Space}+(?!\P{White_Space}))");
  BOOST_TEST(oniguruma_to_icu(R"([^\s\p{L}])") == R"([^\p{White_Space}\p{L}])");
  // An escaped backslash followed by 's' is a literal backslash and a letter.
  BOOST_TEST(oniguruma_to_icu(R"(\\s)") == R"(\\s)");
}

BOOST_AUTO_TEST_CASE(llama3_expression_cuts_words_digit_triples_and_line_breaks) {
  BOOST_TEST(
      split(kLlama3, "Hello world's 1234567 items!!\n\n  next") ==
      (Pieces{"Hello", " world", "'s", " ", "123", "456", "7", " items", "!!\n\n", " ", " next"}));
  // (?i:...) takes upper-case contractions; a punctuation mark joins the letters after it.
  BOOST_TEST(split(kLlama3, "DON'T (stop)") == (Pieces{"DON", "'T", " (", "stop", ")"}));
  BOOST_TEST(split(kQwen, "x=2024;") == (Pieces{"x", "=", "2", "0", "2", "4", ";"}));
}

BOOST_AUTO_TEST_CASE(white_space_means_the_unicode_property_including_nel_and_vertical_tab) {
  // U+0085 (NEL) and U+000B are White_Space for Oniguruma but not ICU's \s: one run here.
  BOOST_TEST(split(R"(\s+)", "a\xC2\x85\x0B b", SplitBehavior::removed) == (Pieces{"a", "b"}));
  BOOST_TEST(split(kLlama3,
                   "a\xE3\x80\x80\xE3\x80\x80"
                   "b") == (Pieces{"a", "\xE3\x80\x80",
                                   "\xE3\x80\x80"
                                   "b"}));
}

BOOST_AUTO_TEST_CASE(behaviors_join_delimiters_as_hugging_face_documents_them) {
  const std::string text = "the-final--countdown";
  BOOST_TEST(split("-", text, SplitBehavior::removed) == (Pieces{"the", "final", "countdown"}));
  BOOST_TEST(split("-", text, SplitBehavior::isolated) ==
             (Pieces{"the", "-", "final", "-", "-", "countdown"}));
  BOOST_TEST(split("-", text, SplitBehavior::merged_with_previous) ==
             (Pieces{"the-", "final-", "-", "countdown"}));
  BOOST_TEST(split("-", text, SplitBehavior::merged_with_next) ==
             (Pieces{"the", "-final", "-", "-countdown"}));
  BOOST_TEST(split("-", text, SplitBehavior::contiguous) ==
             (Pieces{"the", "-", "final", "--", "countdown"}));
}

BOOST_AUTO_TEST_CASE(invert_makes_the_text_between_matches_the_delimiter) {
  // GPT-4o's layout: Removed + invert keeps only the matches.
  BOOST_TEST(split(R"(\p{L}+)", "ab, cd!", SplitBehavior::removed, true) == (Pieces{"ab", "cd"}));
  BOOST_TEST(split(R"(\p{L}+)", "ab, cd!", SplitBehavior::merged_with_previous, true) ==
             (Pieces{"ab, ", "cd!"}));
}

BOOST_AUTO_TEST_CASE(string_patterns_are_literal_and_offsets_stay_in_utf8_bytes) {
  BOOST_TEST(split(".", "a.b", SplitBehavior::removed, false, false) == (Pieces{"a", "b"}));
  // Multi-byte and astral characters before a match: offsets map back to the right bytes.
  BOOST_TEST(split(" ", "\xF0\x9F\x98\x80\xC3\xA9 x", SplitBehavior::isolated) ==
             (Pieces{"\xF0\x9F\x98\x80\xC3\xA9", " ", "x"}));
  BOOST_TEST(split(kLlama3, "").empty());
}

BOOST_AUTO_TEST_CASE(a_sequence_applies_its_splits_in_order_then_the_gpt2_expression) {
  PreTokenizerConfig config;
  config.splits.push_back({"-", false, SplitBehavior::removed, false});
  config.byte_level_regex = true;
  PreTokenizerSequence sequence(config);
  std::vector<std::string_view> pieces;
  sequence.run("a b-c d", pieces);
  BOOST_TEST((Pieces(pieces.begin(), pieces.end())) == (Pieces{"a", " b", "c", " d"}));
  config.byte_level_regex = false;
  PreTokenizerSequence no_regex(config);
  no_regex.run("a b-c d", pieces);
  BOOST_TEST((Pieces(pieces.begin(), pieces.end())) == (Pieces{"a b", "c d"}));
}

BOOST_AUTO_TEST_CASE(add_prefix_space_puts_a_space_before_every_split_piece_that_lacks_one) {
  PreTokenizerConfig config;
  config.splits.push_back({"[0-9]+", true, SplitBehavior::isolated, false});
  config.add_prefix_space = true;
  config.byte_level_regex = false;
  PreTokenizerSequence sequence(config);
  std::vector<std::string_view> pieces;
  sequence.run("ab12 cd", pieces);
  BOOST_TEST((Pieces(pieces.begin(), pieces.end())) == (Pieces{" ab", " 12", " cd"}));
  config.byte_level_regex = true;  // then the GPT-2 expression cuts the prefixed pieces
  PreTokenizerSequence with_regex(config);
  with_regex.run("x y7", pieces);
  BOOST_TEST((Pieces(pieces.begin(), pieces.end())) == (Pieces{" x", " y", " 7"}));
  config.splits.clear();  // no Split: the whole text, once
  PreTokenizerSequence alone(config);
  alone.run("a1", pieces);
  BOOST_TEST((Pieces(pieces.begin(), pieces.end())) == (Pieces{" a", "1"}));
}

BOOST_AUTO_TEST_CASE(bad_patterns_and_behaviors_fail_with_a_message) {
  BOOST_CHECK_THROW(RegexSplit("(unclosed", true, SplitBehavior::isolated, false), db::Error);
  BOOST_CHECK_THROW(parse_split_behavior("Merged"), db::Error);
  BOOST_TEST((parse_split_behavior("MergedWithNext") == SplitBehavior::merged_with_next));
}
