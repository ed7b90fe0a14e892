#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE gpt2 pretokenizer
#include "tokenizer/pretokenizer.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.hpp"
#include "util/text_file.hpp"
#include "util/utf8.hpp"

using namespace db;
using namespace db::tokenizer;
using Pieces = std::vector<std::string>;

namespace {
Pieces fast_pieces(const std::string& text) {
  std::vector<std::string_view> views;
  pretokenize_gpt2(text, views);
  return Pieces(views.begin(), views.end());
}
Pieces icu_pieces(const std::string& text) {
  auto views = pretokenize_gpt2_ref(text);
  return Pieces(views.begin(), views.end());
}
void check(const std::string& text, const Pieces& expected) {
  BOOST_TEST(fast_pieces(text) == expected, "fast matcher on: " << text);
  BOOST_TEST(icu_pieces(text) == expected, "ICU regex on: " << text);
}
}  // namespace

BOOST_AUTO_TEST_CASE(contractions_split_off_only_the_seven_lowercase_forms) {
  check("it's don't we're I've I'm we'll he'd", {"it", "'s", " don", "'t", " we", "'re", " I",
                                                 "'ve", " I", "'m", " we", "'ll", " he", "'d"});
  // Uppercase forms are not contractions; the apostrophe joins the punctuation run.
  check("IT'S", {"IT", "'", "S"});
  check("'sa 'x ''s", {"'s", "a", " '", "x", " ''", "s"});
}

BOOST_AUTO_TEST_CASE(letters_numbers_and_punctuation_take_one_optional_leading_space) {
  check("Hello world 42 !?", {"Hello", " world", " 42", " !?"});
  check("abc123def", {"abc", "123", "def"});
  check("x...y", {"x", "...", "y"});
}

BOOST_AUTO_TEST_CASE(unicode_letters_and_numbers_use_general_categories) {
  // é (Ll), 日本 (Lo), Ⅻ (Nl), ² (No), ٣ (Nd, Arabic-Indic), — (Pd)
  check("caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xE2\x85\xAB\xC2\xB2 \xD9\xA3\xE2\x80\x94",
        {"caf\xC3\xA9", " \xE6\x97\xA5\xE6\x9C\xAC", " \xE2\x85\xAB\xC2\xB2", " \xD9\xA3",
         "\xE2\x80\x94"});
  // A combining accent (Mn) is not a letter: it ends the letter run.
  check("e\xCC\x81t", {"e", "\xCC\x81", "t"});
  // An astral letter (U+1D400 MATHEMATICAL BOLD CAPITAL A) is a letter.
  check(" \xF0\x9D\x90\x80x", {" \xF0\x9D\x90\x80x"});
}

BOOST_AUTO_TEST_CASE(whitespace_runs_leave_their_last_space_to_the_next_word) {
  check("a   b", {"a", "  ", " b"});
  check("a\n\nb", {"a", "\n", "\n", "b"});
  check("a \n b", {"a", " \n", " b"});
  check("a\t b", {"a", "\t", " b"});
  check("end   ", {"end", "   "});
  check("   ", {"   "});
  check("\n", {"\n"});
  check("x \xC2\xA0y", {"x", " ", "\xC2\xA0", "y"});  // NBSP is White_Space
  check("", {});
}

BOOST_AUTO_TEST_CASE(fast_matcher_equals_the_icu_regex_on_the_fortunes_corpus) {
  const std::filesystem::path dir = "/usr/share/games/fortunes";
  if (!std::filesystem::exists(dir)) {
    BOOST_TEST_MESSAGE("fortunes not installed: skipped");
    return;
  }
  size_t files = 0, pieces = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.ends_with(".dat") || name.ends_with(".u8")) continue;
    std::string text = read_text_file(entry.path().string()), valid;
    repair_utf8(text, valid);
    Pieces expected = icu_pieces(valid);
    BOOST_TEST(fast_pieces(valid) == expected, "file " << name);
    ++files;
    pieces += expected.size();
  }
  BOOST_TEST(files > 10u);
  BOOST_TEST_MESSAGE(files << " files, " << pieces << " pieces identical");
}
