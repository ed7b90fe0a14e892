#include "tokenizer/hf_components.hpp"

#include <cmath>
#include <cstdio>
#include <vector>

#include "core/error.hpp"
#include "util/utf8.hpp"

namespace db::tokenizer {
namespace {

bool flag(const JsonValue& object, const char* key, bool fallback) {
  const JsonValue* value = object.find(key);
  return value && value->is_bool() ? value->as_bool() : fallback;
}

bool is_set(const JsonValue* value) {
  return value && !value->is_null();
}

// The members of a Sequence component (its list is named after the component kind), or the
// component itself.
std::vector<const JsonValue*> members(const JsonValue& component, const char* list_key) {
  if (component_type(component) != "Sequence") return {&component};
  const JsonValue* list = component.find(list_key);
  std::vector<const JsonValue*> out;
  if (list && list->is_array())
    for (const JsonValue& member : list->as_array()) out.push_back(&member);
  return out;
}

// "'NFC'" for one component, "Sequence [NFKC, Lowercase]" for several.
std::string describe(const std::vector<const JsonValue*>& components) {
  // Built by appending: GCC 12 warns (-Wrestrict, falsely) on "'" + std::string&&.
  if (components.size() == 1) {
    std::string quoted = "'";
    quoted += component_type(*components[0]);
    return quoted += "'";
  }
  std::string names = "Sequence [";
  for (size_t i = 0; i < components.size(); ++i) {
    if (i > 0) names += ", ";
    names += component_type(*components[i]);
  }
  return names + "]";
}

// What marks a file as SentencePiece-style, or "" when nothing does. SentencePiece spells a
// space as U+2581 and keeps bytes as <0xNN> tokens: Metaspace, Prepend/Replace of U+2581,
// ByteFallback, model.byte_fallback.
std::string sentencepiece_evidence(const JsonValue& root) {
  const JsonValue* model = root.find("model");
  if (model && flag(*model, "byte_fallback", false)) return "model.byte_fallback is true";
  if (model && component_type(*model) == "Unigram") return "model type 'Unigram'";
  const char* kMetaspaceChar = "\xE2\x96\x81";
  for (auto [key, list_key] : {std::pair{"pre_tokenizer", "pretokenizers"},
                               {"normalizer", "normalizers"},
                               {"decoder", "decoders"}}) {
    const JsonValue* component = root.find(key);
    if (!is_set(component)) continue;
    for (const JsonValue* c : members(*component, list_key)) {
      std::string type = component_type(*c);
      if (type == "Metaspace" || type == "ByteFallback" || type == "Prepend")
        return std::string(key) + " '" + type + "'";
      // A Replace writes U+2581 (normalizer) or reads it (decoder).
      const JsonValue* content = c->find("content");
      const JsonValue* pattern = c->find("pattern");
      const JsonValue* literal = pattern ? pattern->find("String") : nullptr;
      for (const JsonValue* text : {content, literal})
        if (type == "Replace" && text && text->is_string() &&
            text->as_string().find(kMetaspaceChar) != std::string::npos)
          return std::string(key) + " 'Replace' of U+2581";
    }
  }
  return "";
}

SplitStep read_split(const JsonValue& split, const std::string& path) {
  require_known_keys(split, {"type", "pattern", "behavior", "invert"}, "pre_tokenizer Split", path);
  SplitStep step;
  const JsonValue* pattern = split.find("pattern");
  DB_REQUIRE(pattern && pattern->is_object(), path + ": Split without a pattern object");
  if (const JsonValue* regex = pattern->find("Regex")) {
    step.pattern = regex->as_string("Split pattern.Regex");
    step.is_regex = true;
  } else if (const JsonValue* literal = pattern->find("String")) {
    step.pattern = literal->as_string("Split pattern.String");
    step.is_regex = false;
  } else {
    DB_REQUIRE(false, path + ": Split pattern needs \"Regex\" or \"String\"");
  }
  const JsonValue* behavior = split.find("behavior");
  DB_REQUIRE(behavior, path + ": Split without a behavior");
  try {
    step.behavior = parse_split_behavior(behavior->as_string("Split behavior"));
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  step.invert = flag(split, "invert", false);
  return step;
}

}  // namespace

std::string component_type(const JsonValue& component) {
  const JsonValue* type = component.find("type");
  return type && type->is_string() ? type->as_string() : "";
}

void require_known_keys(const JsonValue& object, std::initializer_list<std::string_view> known,
                        const std::string& where, const std::string& path) {
  if (!object.is_object()) return;
  for (const auto& [key, value] : object.as_object()) {
    bool listed = false;
    for (std::string_view k : known) listed = listed || key == k;
    DB_REQUIRE(listed, path + ": " + where + "." + printable(key) + " is not supported");
  }
}

void refuse_sentencepiece(const JsonValue& root, const std::string& path) {
  std::string evidence = sentencepiece_evidence(root);
  DB_REQUIRE(evidence.empty(), path + ": SentencePiece/Metaspace tokenizers are not supported (" +
                                   evidence +
                                   "); use a byte-level BPE such as GPT-2, GPT-NeoX, Llama-3 or "
                                   "Qwen");
}

Normalization read_normalizer(const JsonValue* normalizer, const std::string& path) {
  if (!is_set(normalizer)) return Normalization::none;
  std::vector<const JsonValue*> list = members(*normalizer, "normalizers");
  DB_REQUIRE(list.size() <= 1, path + ": normalizer " + describe(list) +
                                   " is not supported (one of NFC, NFD, NFKC, NFKD at most)");
  if (list.empty()) return Normalization::none;
  std::string type = component_type(*list[0]);
  require_known_keys(*list[0], {"type"}, "normalizer " + type, path);
  if (type == "NFC") return Normalization::nfc;
  if (type == "NFKC") return Normalization::nfkc;
  if (type == "NFD") return Normalization::nfd;
  if (type == "NFKD") return Normalization::nfkd;
  DB_REQUIRE(false, path + ": normalizer '" + type + "' is not supported (NFC, NFD, NFKC, NFKD)");
  return Normalization::none;
}

void read_pre_tokenizer(const JsonValue* pre, BpeTokenizerConfig& config, const std::string& path) {
  DB_REQUIRE(is_set(pre), path + ": no pre_tokenizer (a byte-level BPE needs ByteLevel)");
  std::vector<const JsonValue*> list = members(*pre, "pretokenizers");
  DB_REQUIRE(!list.empty() && component_type(*list.back()) == "ByteLevel",
             path + ": pre_tokenizer " + describe(list) +
                 " is not supported (need ByteLevel, alone or last after Split steps)");
  config.pre_tokenizer.splits.clear();
  for (size_t i = 0; i + 1 < list.size(); ++i) {
    std::string type = component_type(*list[i]);
    DB_REQUIRE(type == "Split", path + ": pre_tokenizer '" + type +
                                    "' is not supported (only Split may come before ByteLevel)");
    config.pre_tokenizer.splits.push_back(read_split(*list[i], path));
  }
  const JsonValue& byte_level = *list.back();
  // trim_offsets only moves the offsets Hugging Face reports, never the ids.
  require_known_keys(byte_level, {"type", "add_prefix_space", "trim_offsets", "use_regex"},
                     "pre_tokenizer ByteLevel", path);
  config.pre_tokenizer.byte_level_regex = flag(byte_level, "use_regex", true);
  config.add_prefix_space = flag(byte_level, "add_prefix_space", false);
  // Hugging Face prepends the space to every piece the Split steps made; not implemented.
  DB_REQUIRE(!config.add_prefix_space || config.pre_tokenizer.splits.empty(),
             path + ": ByteLevel add_prefix_space after a Split is not supported");
}

void check_decoder(const JsonValue* decoder, const std::string& path) {
  if (!is_set(decoder)) return;
  // Decoding is the concatenation of the tokens' bytes: what ByteLevel decodes to.
  DB_REQUIRE(
      component_type(*decoder) == "ByteLevel",
      path + ": decoder '" + component_type(*decoder) + "' is not supported (need ByteLevel)");
  require_known_keys(*decoder, {"type", "add_prefix_space", "trim_offsets", "use_regex"},
                     "decoder ByteLevel", path);
}

void check_post_processor(const JsonValue* post_processor, const std::string& path) {
  if (!is_set(post_processor)) return;
  // Post-processors shape one model input (BOS/EOS, pair templates, offsets); `tokenize` writes
  // documents each followed by the end-of-document id instead, so they are read, not applied.
  for (const JsonValue* p : members(*post_processor, "processors")) {
    std::string type = component_type(*p);
    DB_REQUIRE(type == "ByteLevel" || type == "TemplateProcessing" || type == "BertProcessing" ||
                   type == "RobertaProcessing",
               path + ": post_processor '" + type + "' is not supported");
  }
}

std::string bos_token_of(const JsonValue* post_processor) {
  if (!is_set(post_processor)) return {};
  for (const JsonValue* p : members(*post_processor, "processors")) {
    const std::string type = component_type(*p);
    if (type == "TemplateProcessing") {
      const JsonValue* single = p->find("single");
      if (!single || !single->is_array() || single->as_array().empty()) continue;
      const JsonValue* special = single->as_array().front().find("SpecialToken");
      const JsonValue* id = special ? special->find("id") : nullptr;
      if (id && id->is_string()) return id->as_string();
    } else if (type == "BertProcessing" || type == "RobertaProcessing") {
      const JsonValue* cls = p->find("cls");
      if (cls && cls->is_array() && !cls->as_array().empty() && cls->as_array()[0].is_string())
        return cls->as_array()[0].as_string();
    }
  }
  return {};
}

std::string printable(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    auto byte = static_cast<unsigned char>(text[i]);
    size_t length = well_formed_length(text, i), next = i;
    char32_t c = length > 0 ? next_code_point(text, next) : 0;
    if (c >= 0xA0 || (c >= 0x20 && c < 0x7F)) {
      out.append(text.substr(i, length));
      i += length;
    } else if (length > 1) {  // a C1 control such as U+0085
      char escaped[12];
      std::snprintf(escaped, sizeof escaped, "\\u%04X", static_cast<unsigned>(c));
      out += escaped;
      i += length;
    } else {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02X", byte);
      out += escaped;
      ++i;
    }
  }
  return out;
}

uint32_t vocabulary_id(const JsonValue& id, std::string_view token, const std::string& path) {
  const double value = id.as_number("vocabulary id");
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  DB_REQUIRE(value >= 0 && value == std::floor(value),
             path + ": token '" + printable(token) + "' has id " + text + ", not an integer ≥ 0");
  DB_REQUIRE(value < kMaxVocabularySize, path + ": token '" + printable(token) + "' has id " +
                                             text +
                                             ", beyond the largest vocabulary tokenize accepts (" +
                                             std::to_string(kMaxVocabularySize) + " ids)");
  return static_cast<uint32_t>(value);
}

}  // namespace db::tokenizer
