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

void check_model_type(const JsonValue& model, const std::string& path) {
  const std::string type = component_type(model);
  DB_REQUIRE(type == "BPE" || type.empty(),
             path + ": model type '" + type + "' is not supported; " + kSupportedModels);
}

std::vector<NormalizerStep> read_normalizer(const JsonValue* normalizer, const std::string& path) {
  std::vector<NormalizerStep> steps;
  if (!is_set(normalizer)) return steps;
  for (const JsonValue* c : members(*normalizer, "normalizers")) {
    const std::string type = component_type(*c);
    NormalizerStep step;
    if (type == "NFC" || type == "NFKC" || type == "NFD" || type == "NFKD") {
      require_known_keys(*c, {"type"}, "normalizer " + type, path);
      step.kind = NormalizerStep::Kind::unicode;
      step.form = type == "NFC"    ? Normalization::nfc
                  : type == "NFKC" ? Normalization::nfkc
                  : type == "NFD"  ? Normalization::nfd
                                   : Normalization::nfkd;
    } else if (type == "Prepend") {
      require_known_keys(*c, {"type", "prepend"}, "normalizer Prepend", path);
      const JsonValue* prepend = c->find("prepend");
      DB_REQUIRE(prepend, path + ": normalizer Prepend without \"prepend\"");
      step.kind = NormalizerStep::Kind::prepend;
      step.text = prepend->as_string("Prepend prepend");
    } else if (type == "Replace") {
      require_known_keys(*c, {"type", "pattern", "content"}, "normalizer Replace", path);
      const JsonValue* pattern = c->find("pattern");
      const JsonValue* content = c->find("content");
      DB_REQUIRE(pattern && pattern->is_object() && content,
                 path + ": normalizer Replace needs a pattern and a content");
      const JsonValue* literal = pattern->find("String");
      DB_REQUIRE(literal, path +
                              ": normalizer Replace with a Regex pattern is not supported "
                              "(a String pattern is)");
      step.kind = NormalizerStep::Kind::replace;
      step.text = literal->as_string("Replace pattern.String");
      step.replacement = content->as_string("Replace content");
    } else {
      DB_REQUIRE(false, path + ": normalizer '" + type +
                            "' is not supported (supported: NFC, NFD, NFKC, NFKD, Prepend, "
                            "Replace of a String, and a Sequence of them)");
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

namespace {
MetaspaceStep read_metaspace(const JsonValue& metaspace, const std::string& path) {
  require_known_keys(
      metaspace, {"type", "replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"},
      "pre_tokenizer Metaspace", path);
  MetaspaceStep step;
  if (const JsonValue* r = metaspace.find("replacement"); is_set(r))
    step.replacement = r->as_string("Metaspace replacement");
  DB_REQUIRE(!step.replacement.empty() && step.replacement.find(' ') == std::string::npos,
             path + ": Metaspace replacement must be one character other than a space");
  step.prepend_scheme = PrependScheme::always;  // Hugging Face's default
  if (const JsonValue* scheme = metaspace.find("prepend_scheme"); is_set(scheme)) {
    const std::string name = scheme->as_string("Metaspace prepend_scheme");
    if (name == "always") {
      step.prepend_scheme = PrependScheme::always;
    } else if (name == "first") {
      step.prepend_scheme = PrependScheme::first;
    } else if (name == "never") {
      step.prepend_scheme = PrependScheme::never;
    } else {
      DB_REQUIRE(false, path + ": Metaspace prepend_scheme '" + name +
                            "' is unknown (always, first, never)");
    }
  }
  // Files of tokenizers < 0.19 say add_prefix_space instead; false means never.
  if (!flag(metaspace, "add_prefix_space", true)) step.prepend_scheme = PrependScheme::never;
  step.split = flag(metaspace, "split", true);
  return step;
}
}  // namespace

void read_pre_tokenizer(const JsonValue* pre, BpeTokenizerConfig& config, const std::string& path) {
  std::vector<const JsonValue*> list;
  if (is_set(pre)) list = members(*pre, "pretokenizers");
  config.pre_tokenizer = PreTokenizerConfig{};
  config.pre_tokenizer.byte_level_regex = false;
  config.model.byte_level = false;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string type = component_type(*list[i]);
    const bool last = i + 1 == list.size();
    if (type == "Split") {
      config.pre_tokenizer.splits.push_back(read_split(*list[i], path));
      continue;
    }
    DB_REQUIRE(type == "ByteLevel" || type == "Metaspace",
               path + ": pre_tokenizer '" + type +
                   "' is not supported (supported: Split steps, then optionally ByteLevel or "
                   "Metaspace, alone or in a Sequence)");
    DB_REQUIRE(last, path + ": pre_tokenizer " + describe(list) + " is not supported (" + type +
                         " must come last, after any Split steps)");
    if (type == "Metaspace") {
      config.pre_tokenizer.metaspace = read_metaspace(*list[i], path);
      continue;
    }
    const JsonValue& byte_level = *list[i];
    // trim_offsets only moves the offsets Hugging Face reports, never the ids.
    require_known_keys(byte_level, {"type", "add_prefix_space", "trim_offsets", "use_regex"},
                       "pre_tokenizer ByteLevel", path);
    config.model.byte_level = true;
    config.pre_tokenizer.byte_level_regex = flag(byte_level, "use_regex", true);
    config.pre_tokenizer.add_prefix_space = flag(byte_level, "add_prefix_space", false);
  }
}

void check_decoder(const JsonValue* decoder, const std::string& path) {
  if (!is_set(decoder)) return;
  // Decoders turn ids back into text and never change the ids; decode() here concatenates the
  // tokens' bytes (byte-level) or text with U+2581 as a space and <0xNN> as its byte.
  for (const JsonValue* d : members(*decoder, "decoders")) {
    const std::string type = component_type(*d);
    DB_REQUIRE(type == "ByteLevel" || type == "Metaspace" || type == "Replace" ||
                   type == "ByteFallback" || type == "Fuse" || type == "Strip",
               path + ": decoder '" + type +
                   "' is not supported (supported: ByteLevel, Metaspace, Replace, ByteFallback, "
                   "Fuse, Strip)");
  }
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
