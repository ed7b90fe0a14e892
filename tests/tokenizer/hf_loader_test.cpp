#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE hugging face tokenizer.json loader
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "tokenizer/tokenizer.hpp"

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
  expect_error(R"({"model": {"type": "WordPiece", "vocab": {}}})", "is not BPE");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                   "pre_tokenizer": {"type": "Whitespace"}})",
               "'Whitespace' is not supported");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
                   "pre_tokenizer": {"type": "ByteLevel"}})",
               "single-byte token");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})", "pre_tokenizer");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}})",
               "used twice");
  expect_error(R"({"model": {"type": "BPE", "vocab": {"a": -1}, "merges": []}})", "integer");
  BOOST_CHECK_THROW(load_tokenizer("/nonexistent/tokenizer.json"), db::Error);
}
