#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE hugging face tokenizer.json loader
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tokenizer/tokenizer.hpp"
#include "util/text_file.hpp"

using namespace db;
using namespace db::tokenizer;
using Ids = std::vector<uint32_t>;

namespace {
// GPT-NeoX layout: <|endoftext|> 0, <|padding|> 1, byte tokens 2..257 (byte b -> b + 2),
// merges Ġt he Ġthe ll hell hello Ġhello Ã© (258..265), added "  " 266; NFC normalizer.
const std::string kFixture =
    DEPTHBENCH_SOURCE_DIR "/tests/tokenizer/fixtures/neox_tiny_tokenizer.json";

uint32_t byte_id(char c) {
  return static_cast<unsigned char>(c) + 2;
}

std::string write_temp(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / ("depthbench_hf_" + name);
  std::ofstream(path) << text;
  return path.string();
}

// The fixture with one piece of its text replaced (the pre-tokenizer, a model flag, ...).
std::string fixture_with(const std::string& from, const std::string& to) {
  std::string text = read_text_file(kFixture);
  size_t at = text.find(from);
  BOOST_REQUIRE_MESSAGE(at != std::string::npos, "fixture lacks '" << from << "'");
  return text.replace(at, from.size(), to);
}

const std::string kByteLevelPre = R"("pre_tokenizer": {
  "type": "ByteLevel",
  "add_prefix_space": false,
  "trim_offsets": true,
  "use_regex": true
 })";

// A Sequence of one Split and ByteLevel(use_regex=false), the Llama-3 layout.
std::string with_split(const std::string& split_json) {
  return fixture_with(kByteLevelPre, R"("pre_tokenizer": {"type": "Sequence", "pretokenizers": [)" +
                                         split_json +
                                         R"(, {"type": "ByteLevel", "add_prefix_space": false,
                          "trim_offsets": true, "use_regex": false}]})");
}

void expect_error(const std::string& json, const std::string& fragment) {
  std::string path = write_temp("bad.json", json);
  try {
    load_hf_tokenizer(path);
    BOOST_ERROR("accepted a bad tokenizer.json; expected: " << fragment);
  } catch (const db::Error& e) {
    BOOST_TEST(std::string(e.what()).find(fragment) != std::string::npos,
               "message '" << e.what() << "' lacks '" << fragment << "'");
  }
}
}  // namespace

BOOST_AUTO_TEST_CASE(fixture_loads_with_its_vocabulary_and_end_of_text_id) {
  auto tok = load_hf_tokenizer(kFixture);
  BOOST_TEST(tok->vocab_size() == 267u);
  BOOST_TEST(tok->eod_id() == 0u);
  BOOST_TEST(tok->token_id("<|padding|>") == 1);
}

BOOST_AUTO_TEST_CASE(merges_apply_in_rank_order_within_pretokens) {
  auto tok = load_hf_tokenizer(kFixture);
  BOOST_TEST(tok->encode("hello the") == (Ids{263, 260}));
  BOOST_TEST(tok->encode("the hello") == (Ids{byte_id('t'), 259, 264}));
  BOOST_TEST(tok->encode("shell") == (Ids{byte_id('s'), 262}));
}

BOOST_AUTO_TEST_CASE(special_tokens_are_matched_before_pretokenization) {
  auto tok = load_hf_tokenizer(kFixture);
  BOOST_TEST(tok->encode("hello<|endoftext|>the") == (Ids{263, 0, byte_id('t'), 259}));
  BOOST_TEST(tok->encode("<|padding|><|endoftext|>") == (Ids{1, 0}));
  // Not a complete special token: ordinary text.
  BOOST_TEST(tok->encode("<|endoftext").size() > 1u);
}

BOOST_AUTO_TEST_CASE(normalized_added_tokens_take_whitespace_runs_before_the_regex) {
  auto tok = load_hf_tokenizer(kFixture);
  // "a  b": the added "  " is cut out first, so the regex never sees the run.
  BOOST_TEST(tok->encode("a  b") == (Ids{byte_id('a'), 266, byte_id('b')}));
  BOOST_TEST(tok->encode("    ") == (Ids{266, 266}));
}

BOOST_AUTO_TEST_CASE(nfc_normalization_composes_before_byte_level_bpe) {
  auto tok = load_hf_tokenizer(kFixture);
  // "e" + COMBINING ACUTE becomes U+00E9 (C3 A9), which the merge "Ã ©" joins.
  BOOST_TEST(tok->encode("e\xCC\x81") == (Ids{265}));
  BOOST_TEST(tok->encode("\xC3\xA9") == (Ids{265}));
}

BOOST_AUTO_TEST_CASE(decode_returns_the_input_bytes) {
  auto tok = load_hf_tokenizer(kFixture);
  for (std::string text : {"hello the  world<|endoftext|>", "\xF0\x9F\x98\x80 \xE6\x97\xA5\n\t",
                           "x  y   z", "caf\xC3\xA9"}) {
    Ids ids = tok->encode(text);
    BOOST_TEST(tok->decode(ids) == text);
  }
}

BOOST_AUTO_TEST_CASE(newer_pair_merges_are_read_like_string_merges) {
  std::string json = R"({"model": {"type": "BPE", "vocab": {)";
  // Byte-level spellings of all 256 bytes (the printable ASCII ones are themselves).
  std::vector<std::string> names;
  for (int b = 0; b < 256; ++b) {
    std::string name;
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    static int next = 0;
    char32_t c = printable ? b : 256 + next++;
    if (c < 0x80) {
      name = std::string(1, char(c));
    } else {
      name += char(0xC0 | (c >> 6));
      name += char(0x80 | (c & 0x3F));
    }
    if (name == "\"" || name == "\\") name = "\\" + name;
    json += "\"" + name + "\": " + std::to_string(b) + ", ";
  }
  json += R"("ab": 256}, "merges": [["a", "b"]]}, "pre_tokenizer": {"type": "ByteLevel"},
             "added_tokens": [{"id": 257, "content": "<|endoftext|>", "special": true}]})";
  auto tok = load_hf_tokenizer(write_temp("pairs.json", json));
  BOOST_TEST(tok->encode("abab") == (Ids{256, 256}));
  BOOST_TEST(tok->eod_id() == 257u);
}

BOOST_AUTO_TEST_CASE(unsupported_or_broken_files_fail_with_a_message_naming_the_problem) {
  expect_error("{\"model\": ", "JSON");
  expect_error(R"({"model": {"type": "WordPiece", "vocab": {}}})",
               "model type 'WordPiece' is not supported; tokenize supports BPE models");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                   "pre_tokenizer": {"type": "Whitespace"}})",
               "'Whitespace' is not supported");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}})",
               "used twice");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})", "integer");
  BOOST_CHECK_THROW(load_tokenizer("/nonexistent/tokenizer.json"), db::Error);
}

// Tables are sized by the largest id: an id no vocabulary reaches is refused by its token's name
// (it used to end in std::bad_alloc), in the model's vocab and among the added tokens.
BOOST_AUTO_TEST_CASE(an_id_beyond_any_vocabulary_is_refused_naming_its_token) {
  expect_error(fixture_with("\"hello\": 263", "\"hello\": 2147483647"),
               "token 'hello' has id 2147483647, beyond the largest vocabulary tokenize accepts "
               "(4194304 ids)");
  expect_error(fixture_with("\"hello\": 263", "\"hello\": 4194304"),
               "token 'hello' has id 4194304");
  expect_error(fixture_with("\"id\": 266", "\"id\": 2147483647"), "token '  ' has id 2147483647");
  expect_error(fixture_with("\"hello\": 263", "\"hello\": 2.5"), "token 'hello' has id 2.5");
}

BOOST_AUTO_TEST_CASE(split_then_byte_level_without_regex_cuts_only_where_the_split_says) {
  // Isolated on "l": " the hello" -> " the he", "l", "l", "o"; no GPT-2 cut at the space.
  auto tok = load_hf_tokenizer(
      write_temp("split.json",
                 with_split(R"({"type": "Split", "pattern": {"String": "l"}, "behavior": "Isolated",
                     "invert": false})")));
  BOOST_TEST(tok->encode(" the hello") ==
             (Ids{260, byte_id(' '), 259, byte_id('l'), byte_id('l'), byte_id('o')}));
  // Removed drops the delimiters from the text, as Hugging Face does.
  auto removed = load_hf_tokenizer(
      write_temp("split_removed.json",
                 with_split(R"({"type": "Split", "pattern": {"Regex": "l+"}, "behavior": "Removed",
                     "invert": false})")));
  BOOST_TEST(removed->encode("hello") == (Ids{259, byte_id('o')}));
}

BOOST_AUTO_TEST_CASE(ignore_merges_maps_a_pretoken_in_the_vocabulary_to_its_id) {
  // "hex" is in the vocabulary (id 267) but no merge builds it: merges give "he" + "x".
  std::string vocab = fixture_with(R"("vocab": {)", R"("vocab": {"hex": 267, )");
  std::string plain = write_temp("hex.json", vocab);
  BOOST_TEST(load_hf_tokenizer(plain)->encode("hex") == (Ids{259, byte_id('x')}));
  std::string ignoring = vocab;
  ignoring.replace(ignoring.find(R"("byte_fallback")"), 0, R"("ignore_merges": true, )");
  auto tok = load_hf_tokenizer(write_temp("hex_ignore.json", ignoring));
  BOOST_TEST(tok->encode("hex hex") == (Ids{267, byte_id(' '), 259, byte_id('x')}));
  BOOST_TEST(tok->model().ignore_merges());
}

// A byte-level vocabulary may lack single-byte tokens (GPT-NeoX has none for 0xC0, 0xC1,
// 0xF5-0xFF, which valid UTF-8 never holds); only meeting such a byte is an error, naming it.
BOOST_AUTO_TEST_CASE(a_byte_without_a_token_is_an_error_only_when_met) {
  std::string path =
      write_temp("few_bytes.json", R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1,
                   "ab": 2}, "merges": ["a b"]}, "pre_tokenizer": {"type": "ByteLevel"}})");
  auto tok = load_hf_tokenizer(path);
  BOOST_TEST(tok->encode("abba") == (Ids{2, 1, 0}));
  try {
    tok->encode("abc");
    BOOST_ERROR("encoded a byte without a token");
  } catch (const db::Error& e) {
    BOOST_TEST(std::string(e.what()).find("no token for byte 0x63") != std::string::npos, e.what());
  }
  // A character-level (SentencePiece-style) vocabulary without byte_fallback or unk_token.
  auto chars = load_hf_tokenizer(
      write_temp("chars.json", R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})"));
  BOOST_TEST(chars->encode("aa") == (Ids{0, 0}));
  BOOST_CHECK_THROW(chars->encode("b"), db::Error);
}

// DeepSeek-V3 stores its special tokens verbatim in the byte-level vocabulary: accepted as
// added tokens; a vocabulary entry that is neither byte-level text nor an added token is not.
BOOST_AUTO_TEST_CASE(added_tokens_need_not_be_byte_level_text) {
  const std::string special =
      "<\xEF\xBD\x9C"
      "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
  std::string json =
      fixture_with(R"("added_tokens": [)", R"("added_tokens": [{"id": 267, "content": ")" +
                                               special + R"(", "special": true},)");
  json.replace(json.find(R"("vocab": {)"), 10, R"("vocab": {")" + special + R"(": 267, )");
  auto tok = load_hf_tokenizer(write_temp("deepseek.json", json));
  BOOST_TEST(tok->encode(special + "hello") == (Ids{267, 263}));
  BOOST_TEST(tok->decode(Ids{267, 263}) == special + "hello");
  BOOST_TEST(tok->token_id(special) == 267);
  expect_error(fixture_with(R"("vocab": {)", R"("vocab": {")" + special + R"(": 267, )"),
               "is not byte-level text");
}

BOOST_AUTO_TEST_CASE(unsupported_models_are_refused_by_name_with_what_is_supported) {
  for (const char* type : {"Unigram", "WordPiece", "WordLevel"})
    expect_error(std::string(R"({"model": {"type": ")") + type + R"(", "vocab": []}})",
                 std::string("model type '") + type +
                     "' is not supported; tokenize supports BPE models: byte-level (GPT-2, "
                     "GPT-NeoX");
}

BOOST_AUTO_TEST_CASE(messages_never_quote_a_control_byte) {
  expect_error(R"({"model": {"type": "BPE", "vocab": {"\u0001x": 0}, "merges": []},
                   "pre_tokenizer": {"type": "ByteLevel"}})",
               "entry '\\x01x' is not byte-level text");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a\u0085": 0}, "merges": []},
                   "pre_tokenizer": {"type": "ByteLevel"}})",
               "entry 'a\\u0085' is not byte-level text");
}

BOOST_AUTO_TEST_CASE(every_setting_that_is_not_implemented_is_refused_by_name) {
  auto model_with = [](const std::string& extra) {
    return fixture_with(R"("byte_fallback": false)", R"("byte_fallback": false, )" + extra);
  };
  expect_error(model_with(R"("dropout_seed": 1)"), "model.dropout_seed is not supported");
  expect_error(fixture_with(R"("dropout": null)", R"("dropout": 0.1)"), "model.dropout");
  expect_error(
      fixture_with(R"("continuing_subword_prefix": null)", R"("continuing_subword_prefix": "##")"),
      "model.continuing_subword_prefix is not supported");
  expect_error(fixture_with(R"("truncation": null)", R"("truncation": {"max_length": 512})"),
               "truncation is set");
  expect_error(fixture_with(R"("version": "1.0")", R"("version": "1.0", "extra": 1)"),
               "tokenizer.extra is not supported");
  expect_error(fixture_with(R"("normalizer": {
  "type": "NFC"
 })",
                            R"("normalizer": {"type": "Sequence", "normalizers": [
                                {"type": "NFKC"}, {"type": "Lowercase"}]})"),
               "normalizer 'Lowercase' is not supported (supported: NFC, NFD, NFKC, NFKD, "
               "Prepend, Replace of a String, and a Sequence of them)");
  expect_error(fixture_with(R"("decoder": {
  "type": "ByteLevel")",
                            R"("decoder": {"type": "WordPiece")"),
               "decoder 'WordPiece' is not supported");
  expect_error(fixture_with(R"("post_processor": {
  "type": "ByteLevel")",
                            R"("post_processor": {"type": "Future")"),
               "post_processor 'Future' is not supported");
  expect_error(with_split(R"({"type": "Split", "pattern": {"Regex": "x"}, "behavior": "Merged"})"),
               "Split behavior 'Merged' is unknown");
  expect_error(
      with_split(R"({"type": "Split", "pattern": {"Regex": "(x"}, "behavior": "Removed"})"),
      "does not compile");
  expect_error(with_split(R"({"type": "Digits", "individual_digits": true})"),
               "pre_tokenizer 'Digits' is not supported");
  expect_error(fixture_with(kByteLevelPre, R"("pre_tokenizer": {"type": "Sequence",
                   "pretokenizers": [{"type": "ByteLevel"}, {"type": "Split",
                   "pattern": {"String": "x"}, "behavior": "Removed"}]})"),
               "ByteLevel must come last");
}
