// Hugging Face tokenizer.json (the format of GPT-NeoX-20B and OLMo): only the parts a byte-level
// BPE needs are read; a setting outside that scope that would change the encoding (another
// model type, pre-tokenizer or normalizer) is rejected with a message, never silently ignored.
#include "core/error.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/json.hpp"
#include "tokenizer/tokenizer.hpp"

namespace db::tokenizer {
namespace {

constexpr long long kMaxId = (1LL << 31) - 1;

std::string type_of(const JsonValue& component) {
  const JsonValue* type = component.find("type");
  return type && type->is_string() ? type->as_string() : "";
}

bool flag(const JsonValue& object, const char* key, bool fallback) {
  const JsonValue* value = object.find(key);
  return value && value->is_bool() ? value->as_bool() : fallback;
}

// The ByteLevel pre-tokenizer, alone or as the only member of a Sequence.
void read_pre_tokenizer(const JsonValue& pre, BpeTokenizerConfig& config, const std::string& path) {
  const JsonValue* byte_level = &pre;
  if (type_of(pre) == "Sequence") {
    const JsonValue* list = pre.find("pretokenizers");
    DB_REQUIRE(list && list->is_array() && list->as_array().size() == 1,
               path + ": only a ByteLevel pre-tokenizer is supported (Sequence of several found)");
    byte_level = &list->as_array()[0];
  }
  DB_REQUIRE(type_of(*byte_level) == "ByteLevel",
             path + ": pre_tokenizer '" + type_of(*byte_level) +
                 "' is not supported (need ByteLevel, the GPT-2/GPT-NeoX layout)");
  DB_REQUIRE(flag(*byte_level, "use_regex", true),
             path + ": ByteLevel with use_regex=false is not supported");
  config.add_prefix_space = flag(*byte_level, "add_prefix_space", false);
}

Normalization read_normalizer(const JsonValue* normalizer, const std::string& path) {
  if (!normalizer || normalizer->is_null()) return Normalization::none;
  std::string type = type_of(*normalizer);
  if (type == "Sequence") {
    const JsonValue* list = normalizer->find("normalizers");
    DB_REQUIRE(list && list->is_array() && list->as_array().size() <= 1,
               path + ": a Sequence of several normalizers is not supported");
    return list->as_array().empty() ? Normalization::none
                                    : read_normalizer(&list->as_array()[0], path);
  }
  if (type == "NFC") return Normalization::nfc;
  if (type == "NFKC") return Normalization::nfkc;
  if (type == "NFD") return Normalization::nfd;
  if (type == "NFKD") return Normalization::nfkd;
  DB_REQUIRE(false, path + ": normalizer '" + type + "' is not supported");
  return Normalization::none;
}

std::string vocab_bytes(const std::string& text, const std::string& path) {
  auto bytes = vocab_text_to_bytes(text);
  DB_REQUIRE(bytes.has_value(), path + ": vocabulary entry '" + text +
                                    "' is not byte-level text (a ByteLevel BPE is required)");
  return *bytes;
}

}  // namespace

std::unique_ptr<BpeTokenizer> load_hf_tokenizer(const std::string& path) {
  JsonValue root;
  try {
    root = parse_json(read_text_file(path));
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  DB_REQUIRE(root.is_object(), path + ": not a tokenizer.json (top level is not an object)");
  const JsonValue* model = root.find("model");
  DB_REQUIRE(model && model->is_object(), path + ": no \"model\" object");
  DB_REQUIRE(type_of(*model) == "BPE" || type_of(*model).empty(),
             path + ": model type '" + type_of(*model) + "' is not BPE");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const JsonValue* v = model->find(key);
    DB_REQUIRE(!v || v->is_null() || (v->is_string() && v->as_string().empty()),
               path + ": model." + key + " is not supported");
  }
  const JsonValue* dropout = model->find("dropout");
  DB_REQUIRE(!dropout || dropout->is_null() || dropout->as_number("dropout") == 0.0,
             path + ": BPE dropout is not supported");

  BpeTokenizerConfig config;
  config.description = path;
  const JsonValue* vocab = model->find("vocab");
  DB_REQUIRE(vocab && vocab->is_object(), path + ": model.vocab must be an object");
  for (const auto& [text, id_value] : vocab->as_object()) {
    auto id = static_cast<size_t>(id_value.as_integer("vocabulary id", 0, kMaxId));
    if (config.id_to_bytes.size() <= id) config.id_to_bytes.resize(id + 1);
    DB_REQUIRE(config.id_to_bytes[id].empty(),
               path + ": vocabulary id " + std::to_string(id) + " is used twice");
    config.id_to_bytes[id] = vocab_bytes(text, path);
  }

  const JsonValue* merges = model->find("merges");
  DB_REQUIRE(merges && merges->is_array(), path + ": model.merges must be an array");
  for (const JsonValue& merge : merges->as_array()) {
    std::string left, right;
    if (merge.is_string()) {  // "a b" (tokenizers < 0.20)
      const std::string& line = merge.as_string();
      size_t space = line.find(' ');
      DB_REQUIRE(space != std::string::npos && line.find(' ', space + 1) == std::string::npos,
                 path + ": merge '" + line + "' is not two tokens separated by one space");
      left = line.substr(0, space);
      right = line.substr(space + 1);
    } else {  // ["a", "b"] (tokenizers >= 0.20)
      const JsonArray& pair = merge.as_array("merge");
      DB_REQUIRE(pair.size() == 2, path + ": a merge must have two tokens");
      left = pair[0].as_string("merge token");
      right = pair[1].as_string("merge token");
    }
    config.merges.emplace_back(vocab_bytes(left, path), vocab_bytes(right, path));
  }

  const JsonValue* pre = root.find("pre_tokenizer");
  DB_REQUIRE(pre && pre->is_object(), path + ": no pre_tokenizer (ByteLevel required)");
  read_pre_tokenizer(*pre, config, path);
  config.normalization = read_normalizer(root.find("normalizer"), path);
  if (const JsonValue* decoder = root.find("decoder"); decoder && !decoder->is_null())
    DB_REQUIRE(type_of(*decoder) == "ByteLevel",
               path + ": decoder '" + type_of(*decoder) + "' is not supported (need ByteLevel)");

  if (const JsonValue* added = root.find("added_tokens"); added && !added->is_null()) {
    for (const JsonValue& entry : added->as_array("added_tokens")) {
      AddedToken token;
      DB_REQUIRE(entry.find("id"), path + ": added token without id");
      token.id = static_cast<uint32_t>(entry.find("id")->as_integer("added token id", 0, kMaxId));
      DB_REQUIRE(entry.find("content"), path + ": added token without content");
      token.content = entry.find("content")->as_string("added token content");
      token.special = flag(entry, "special", false);
      token.normalized = flag(entry, "normalized", !token.special);
      token.lstrip = flag(entry, "lstrip", false);
      token.rstrip = flag(entry, "rstrip", false);
      token.single_word = flag(entry, "single_word", false);
      config.added_tokens.push_back(std::move(token));
    }
  }
  auto tokenizer = std::make_unique<BpeTokenizer>(std::move(config));
  // The end-of-document default; `depthbench tokenize --eod-id/--eod-token` overrides it.
  if (int64_t eod = tokenizer->token_id("<|endoftext|>"); eod >= 0)
    tokenizer->set_eod_id(static_cast<uint32_t>(eod));
  return tokenizer;
}

}  // namespace db::tokenizer
