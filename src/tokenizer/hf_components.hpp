// The parts of a Hugging Face tokenizer.json around the BPE model: normalizer, pre-tokenizer,
// decoder, post-processor. Each reader either turns a setting into configuration or refuses it
// with a one-line message naming it (doc/tokenize.md lists which is which); none is ignored.
// `path` prefixes every message.
#pragma once
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.hpp"
#include "util/json.hpp"

namespace db::tokenizer {

// The "type" member of a component, or "" when absent.
std::string component_type(const JsonValue& component);

// Refuses the first member of `object` that is not in `known`: "PATH: WHERE.KEY is not
// supported".
void require_known_keys(const JsonValue& object, std::initializer_list<std::string_view> known,
                        const std::string& where, const std::string& path);

// What `tokenize` reads, for the message refusing anything else.
inline constexpr const char* kSupportedModels =
    "tokenize supports BPE models: byte-level (GPT-2, GPT-NeoX, OLMo, Llama-3, Qwen, GPT-4o, "
    "DeepSeek) and SentencePiece-style (Llama-2, Mistral, Gemma); not Unigram, WordPiece or "
    "WordLevel";

// Refuses a model other than BPE (Unigram, WordPiece, WordLevel) by name.
void check_model_type(const JsonValue& model, const std::string& path);

std::vector<NormalizerStep> read_normalizer(const JsonValue* normalizer, const std::string& path);
// Fills config.pre_tokenizer and config.model.byte_level (a ByteLevel
// pre-tokenizer makes the model byte-level; without one it works on characters).
void read_pre_tokenizer(const JsonValue* pre_tokenizer, BpeTokenizerConfig& config,
                        const std::string& path);
void check_decoder(const JsonValue* decoder, const std::string& path);
void check_post_processor(const JsonValue* post_processor, const std::string& path);
// The token the post-processor puts before a single sequence (TemplateProcessing's first
// SpecialToken, Bert/Roberta's cls), or "" when it puts none.
std::string bos_token_of(const JsonValue* post_processor);

// Text for a message: control and non-UTF-8 bytes as \xNN, so a message stays one printable line.
std::string printable(std::string_view text);

// The id a vocabulary file (tokenizer.json's vocab or added_tokens, GPT-2's encoder.json) gives
// `token`, refused naming the token unless it is a whole number below kMaxVocabularySize.
uint32_t vocabulary_id(const JsonValue& id, std::string_view token, const std::string& path);

}  // namespace db::tokenizer
