// Hugging Face tokenizer.json of a BPE, byte-level (GPT-NeoX, OLMo, Llama-3, Qwen, GPT-4o,
// DeepSeek) or SentencePiece-style (Llama-2, Mistral, Gemma): the model (vocabulary, merges and
// their options) and the added tokens are read here, the components around the model in
// hf_components.cpp. Every member of the file is either used or refused by
// name (doc/tokenize.md); nothing that could change the ids is silently ignored.
#include <filesystem>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/error.hpp"
#include "tokenizer/byte_level.hpp"
#include "tokenizer/hf_components.hpp"
#include "tokenizer/tokenizer.hpp"
#include "util/json.hpp"
#include "util/text_file.hpp"

namespace db::tokenizer {
namespace {

bool flag(const JsonValue& object, const char* key, bool fallback) {
  const JsonValue* value = object.find(key);
  return value && value->is_bool() ? value->as_bool() : fallback;
}

bool is_set(const JsonValue* value) {
  return value && !value->is_null();
}

// A vocabulary or merge entry as the model sees it: raw bytes for a byte-level model, the text
// itself otherwise. Empty optional: not byte-level text.
std::optional<std::string> model_string(const std::string& text, const BpeTokenizerConfig& config) {
  if (!config.model.byte_level) return text;
  return vocab_text_to_bytes(text);
}

// Model settings other than vocab and merges: implemented, harmless, or refused by name.
void read_model_settings(const JsonValue& model, BpeTokenizerConfig& config,
                         const std::string& path) {
  require_known_keys(
      model,
      {"type", "vocab", "merges", "dropout", "unk_token", "fuse_unk", "byte_fallback",
       "continuing_subword_prefix", "end_of_word_suffix", "ignore_merges"},
      "model", path);
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const JsonValue* v = model.find(key);
    DB_REQUIRE(!is_set(v) || (v->is_string() && v->as_string().empty()),
               path + ": model." + key + " is not supported");
  }
  const JsonValue* dropout = model.find("dropout");
  DB_REQUIRE(!is_set(dropout) || dropout->as_number("dropout") == 0.0,
             path + ": model.dropout (BPE dropout) is not supported");
  config.model.ignore_merges = flag(model, "ignore_merges", false);
  config.model.byte_fallback = flag(model, "byte_fallback", false);
  config.model.fuse_unk = flag(model, "fuse_unk", false);
  // A byte-level vocabulary has a token for every byte valid UTF-8 holds: unk_token and
  // fuse_unk never act there, and byte_fallback has nothing to do.
  DB_REQUIRE(!config.model.byte_level || !config.model.byte_fallback,
             path + ": model.byte_fallback with a ByteLevel pre-tokenizer is not supported");
}

// The unknown token of a character-level model, looked up once the vocabulary is read.
void read_unknown_token(const JsonValue& model, BpeTokenizerConfig& config,
                        const std::string& path) {
  const JsonValue* unk = model.find("unk_token");
  if (!is_set(unk) || config.model.byte_level) return;
  const std::string& name = unk->as_string("model.unk_token");
  for (uint32_t id = 0; id < config.id_to_bytes.size(); ++id)
    if (config.id_to_bytes[id] == name) {
      config.model.unk_id = id;
      return;
    }
  DB_REQUIRE(false, path + ": model.unk_token '" + printable(name) + "' is not in the vocabulary");
}

void read_vocabulary(const JsonValue& model, BpeTokenizerConfig& config, const std::string& path) {
  const JsonValue* vocab = model.find("vocab");
  DB_REQUIRE(vocab && vocab->is_object(), path + ": model.vocab must be an object");
  std::unordered_set<std::string> added;
  for (const AddedToken& t : config.added_tokens) added.insert(t.content);
  for (const auto& [text, id_value] : vocab->as_object()) {
    const size_t id = vocabulary_id(id_value, text, path);
    if (config.id_to_bytes.size() <= id) {
      config.id_to_bytes.resize(id + 1);
      config.id_to_text.resize(id + 1);
    }
    DB_REQUIRE(config.id_to_bytes[id].empty() && config.id_to_text[id].empty(),
               path + ": vocabulary id " + std::to_string(id) + " is used twice");
    std::optional<std::string> bytes = model_string(text, config);
    if (!bytes) {
      // An added token stored in the vocabulary under its own text (DeepSeek's
      // <｜begin▁of▁sentence｜>): no merge can build it; the text finds it.
      DB_REQUIRE(added.count(text), path + ": vocabulary entry '" + printable(text) +
                                        "' is not byte-level text (a ByteLevel BPE vocabulary "
                                        "spells bytes as GPT-2's characters)");
      config.id_to_text[id] = text;
      continue;
    }
    config.id_to_bytes[id] = *bytes;
  }
}

void read_merges(const JsonValue& model, BpeTokenizerConfig& config, const std::string& path) {
  const JsonValue* merges = model.find("merges");
  DB_REQUIRE(merges && merges->is_array(), path + ": model.merges must be an array");
  config.merges.reserve(merges->as_array().size());
  auto entry = [&](const std::string& text) {
    std::optional<std::string> bytes = model_string(text, config);
    DB_REQUIRE(bytes.has_value(),
               path + ": merge token '" + printable(text) + "' is not byte-level text");
    return *bytes;
  };
  for (const JsonValue& merge : merges->as_array()) {
    std::string left, right;
    if (merge.is_string()) {  // "a b" (tokenizers < 0.20)
      const std::string& line = merge.as_string();
      size_t space = line.find(' ');
      DB_REQUIRE(
          space != std::string::npos && line.find(' ', space + 1) == std::string::npos,
          path + ": merge '" + printable(line) + "' is not two tokens separated by one space");
      left = line.substr(0, space);
      right = line.substr(space + 1);
    } else {  // ["a", "b"] (tokenizers >= 0.20)
      const JsonArray& pair = merge.as_array("merge");
      DB_REQUIRE(pair.size() == 2, path + ": a merge must have two tokens");
      left = pair[0].as_string("merge token");
      right = pair[1].as_string("merge token");
    }
    config.merges.emplace_back(entry(left), entry(right));
  }
}

void read_added_tokens(const JsonValue* added, BpeTokenizerConfig& config,
                       const std::string& path) {
  if (!is_set(added)) return;
  for (const JsonValue& entry : added->as_array("added_tokens")) {
    require_known_keys(
        entry, {"id", "content", "special", "normalized", "lstrip", "rstrip", "single_word"},
        "added_tokens[]", path);
    AddedToken token;
    DB_REQUIRE(entry.find("id"), path + ": added token without id");
    DB_REQUIRE(entry.find("content"), path + ": added token without content");
    token.content = entry.find("content")->as_string("added token content");
    token.id = vocabulary_id(*entry.find("id"), token.content, path);
    token.special = flag(entry, "special", false);
    token.normalized = flag(entry, "normalized", !token.special);
    token.lstrip = flag(entry, "lstrip", false);
    token.rstrip = flag(entry, "rstrip", false);
    token.single_word = flag(entry, "single_word", false);
    config.added_tokens.push_back(std::move(token));
  }
}

// `bos_token` of the tokenizer_config.json Hugging Face ships beside tokenizer.json, for files
// whose post-processor does not name it (Llama-3 as exported by transformers.js); "" when there
// is no such file, no such token, or `add_bos_token` is false.
std::string configured_bos_token(const std::string& tokenizer_json) {
  const std::filesystem::path config_path =
      std::filesystem::path(tokenizer_json).parent_path() / "tokenizer_config.json";
  if (!std::filesystem::exists(config_path)) return {};
  JsonValue config;
  std::string error;
  if (!try_parse_json(read_text_file(config_path.string()), config, error)) return {};
  const JsonValue* add = config.find("add_bos_token");
  if (add && add->is_bool() && !add->as_bool()) return {};
  const JsonValue* bos = config.find("bos_token");
  if (bos && bos->is_object()) bos = bos->find("content");  // {"content": ..., "lstrip": ...}
  return bos && bos->is_string() ? bos->as_string() : std::string();
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
  require_known_keys(root,
                     {"version", "truncation", "padding", "added_tokens", "normalizer",
                      "pre_tokenizer", "model", "post_processor", "decoder"},
                     "tokenizer", path);
  // Truncation and padding shape batches of model inputs; a corpus is never cut or padded.
  DB_REQUIRE(!is_set(root.find("truncation")),
             path + ": truncation is set; tokenize never truncates documents (set it to null)");
  DB_REQUIRE(!is_set(root.find("padding")),
             path + ": padding is set; tokenize never pads documents (set it to null)");
  const JsonValue* model = root.find("model");
  DB_REQUIRE(model && model->is_object(), path + ": no \"model\" object");
  // Before anything reads the vocabulary: a Unigram or WordPiece vocabulary is refused for
  // what it is, not for its first odd entry.
  check_model_type(*model, path);

  BpeTokenizerConfig config;
  config.description = path;
  // The pre-tokenizer says how the vocabulary is spelled (ByteLevel: bytes as GPT-2's
  // characters), the added tokens which entries may be spelled otherwise.
  read_pre_tokenizer(root.find("pre_tokenizer"), config, path);
  read_added_tokens(root.find("added_tokens"), config, path);
  read_model_settings(*model, config, path);
  read_vocabulary(*model, config, path);
  read_unknown_token(*model, config, path);
  read_merges(*model, config, path);
  config.normalizer = read_normalizer(root.find("normalizer"), path);
  check_decoder(root.find("decoder"), path);
  check_post_processor(root.find("post_processor"), path);

  std::unordered_map<std::string, bool> is_special;
  for (const AddedToken& t : config.added_tokens) is_special[t.content] = t.special;
  std::unique_ptr<BpeTokenizer> tokenizer;
  try {
    tokenizer = std::make_unique<BpeTokenizer>(std::move(config));
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  // The end-of-document default; `depthbench tokenize --eod-id/--eod-token` overrides it.
  // GPT-2, GPT-NeoX, Qwen and GPT-4o call it <|endoftext|>, Llama-3 <|end_of_text|>, Llama-2
  // and Mistral </s>, Gemma <eos>, DeepSeek <｜end▁of▁sentence｜>. A special added token comes
  // first: Gemma also has a non-special </s> (an HTML tag).
  const char* const eod_names[] = {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>",
                                   "<\uFF5Cend\u2581of\u2581sentence\uFF5C>"};
  int64_t eod = -1;
  for (bool special_only : {true, false})
    for (const char* name : eod_names)
      if (eod < 0 && (!special_only || is_special[name])) eod = tokenizer->token_id(name);
  if (eod >= 0) tokenizer->set_eod_id(static_cast<uint32_t>(eod));
  std::string bos = bos_token_of(root.find("post_processor"));
  if (bos.empty()) bos = configured_bos_token(path);
  if (!bos.empty()) {
    const int64_t id = tokenizer->token_id(bos);
    DB_REQUIRE(id >= 0, path + ": beginning-of-sequence token '" + printable(bos) +
                            "' is not in the vocabulary");
    tokenizer->set_bos_id(static_cast<uint32_t>(id));
  }
  return tokenizer;
}

}  // namespace db::tokenizer
