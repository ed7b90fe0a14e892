// Every small tokenizer.json under fixtures/hf/ encodes the committed corpus exactly as Hugging
// Face's Rust tokenizers did (fixtures/hf/NAME.ids.json, made once by
// hf_reference/make_reference.js). The fixtures are cut from the real files of GPT-NeoX-20B,
// OLMo, DeepSeek-V3, Llama-2 and Gemma 3 and keep their configuration blocks; two more give the
// llama-2 vocabulary Mistral's Metaspace layout and the remaining SentencePiece options, and one
// puts Split steps before GPT-NeoX's ByteLevel with add_prefix_space.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE tokenizer.json files against Hugging Face tokenizers
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.hpp"
#include "util/json.hpp"
#include "util/text_file.hpp"
#include "util/utf8.hpp"

using namespace db;
using namespace db::tokenizer;
using Ids = std::vector<uint32_t>;

namespace {
const std::string kDir = DEPTHBENCH_SOURCE_DIR "/tests/tokenizer/fixtures/hf/";

std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

// The corpus as `tokenize` hands it to a tokenizer: invalid UTF-8 repaired to U+FFFD.
std::vector<std::string> corpus() {
  std::vector<std::string> documents;
  const JsonValue root = parse_json(read_text_file(kDir + "corpus.json"));
  for (const JsonValue& hex : root.find("documents")->as_array()) {
    std::string repaired;
    repair_utf8(from_hex(hex.as_string()), repaired);
    documents.push_back(repaired);
  }
  return documents;
}

const char* const kFixtures[] = {"neox20b", "olmo_dolma",        "deepseek_v3",
                                 "llama2",  "mistral_metaspace", "sentencepiece_options",
                                 "gemma3",  "split_prefix_space"};
}  // namespace

BOOST_DATA_TEST_CASE(every_document_encodes_as_hugging_face_encodes_it,
                     boost::unit_test::data::make(kFixtures), name) {
  auto tokenizer = load_hf_tokenizer(kDir + name + ".json");
  const std::vector<std::string> documents = corpus();
  const JsonValue reference = parse_json(read_text_file(kDir + name + ".ids.json"));
  const JsonArray& expected = reference.find("ids")->as_array();
  BOOST_REQUIRE_EQUAL(expected.size(), documents.size());
  size_t mismatched = 0, tokens = 0;
  for (size_t d = 0; d < documents.size(); ++d) {
    Ids want;
    for (const JsonValue& id : expected[d].as_array())
      want.push_back(static_cast<uint32_t>(id.as_number("id")));
    tokens += want.size();
    const Ids got = tokenizer->encode(documents[d]);
    if (got == want) continue;
    ++mismatched;
    size_t at = 0;
    while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
    BOOST_ERROR(name << " document " << d << ": first difference at token " << at << " of "
                     << want.size() << " (ours " << (at < got.size() ? int64_t(got[at]) : -1)
                     << ", Hugging Face " << (at < want.size() ? int64_t(want[at]) : -1) << ")");
  }
  BOOST_TEST_MESSAGE(name << ": " << documents.size() << " documents, " << tokens << " tokens, "
                          << mismatched << " mismatched");
  BOOST_TEST(tokens > 2000u);  // the comparison is not vacuous
}
