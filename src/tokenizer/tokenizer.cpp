#include "tokenizer/tokenizer.hpp"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "util/utf8.hpp"

namespace db::tokenizer {
namespace {

const icu::Normalizer2* normalizer_for(Normalization n) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* result = nullptr;
  switch (n) {
    case Normalization::none:
      return nullptr;
    case Normalization::nfc:
      result = icu::Normalizer2::getNFCInstance(status);
      break;
    case Normalization::nfkc:
      result = icu::Normalizer2::getNFKCInstance(status);
      break;
    case Normalization::nfd:
      result = icu::Normalizer2::getNFDInstance(status);
      break;
    case Normalization::nfkd:
      result = icu::Normalizer2::getNFKDInstance(status);
      break;
  }
  DB_REQUIRE(U_SUCCESS(status), std::string("ICU normalizer: ") + u_errorName(status));
  return result;
}

bool is_ascii(std::string_view text) {
  for (unsigned char c : text)
    if (c >= 0x80) return false;
  return true;
}

bool is_word_byte(unsigned char c) {
  return std::isalnum(c) || c == '_' || c >= 0x80;
}
bool is_space_byte(unsigned char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

// What a SentencePiece-style vocabulary entry decodes to: U+2581 as a space, a byte-fallback
// token <0xNN> as its byte.
std::string sentencepiece_text(const std::string& entry, bool byte_fallback) {
  unsigned byte = 0;
  char tail = 0;
  if (byte_fallback && entry.size() == 6 &&
      std::sscanf(entry.c_str(), "<0x%2X%c", &byte, &tail) == 2 && tail == '>')
    return std::string(1, static_cast<char>(byte));
  std::string out;
  for (size_t at = 0; at < entry.size();) {
    if (entry.compare(at, 3, "\xE2\x96\x81") == 0) {
      out += ' ';
      at += 3;
    } else {
      out += entry[at++];
    }
  }
  return out;
}

}  // namespace

BpeTokenizer::BpeTokenizer(BpeTokenizerConfig config)
    : BpeTokenizer(std::make_shared<const BpeTokenizerConfig>(std::move(config))) {}

BpeTokenizer::BpeTokenizer(std::shared_ptr<const BpeTokenizerConfig> shared)
    : config_(std::move(shared)),
      model_(config_->id_to_bytes, config_->merges, config_->model),
      added_tokens_(config_->added_tokens),
      normalizer_(config_->normalizer),
      pre_tokenizer_(config_->pre_tokenizer),
      description_(config_->description) {
  const BpeTokenizerConfig& config = *config_;
  for (const NormalizerStep& step : normalizer_)
    normalizer_for(step.form);  // fail early when ICU lacks the data
  vocab_size_ = model_.size();
  for (const AddedToken& t : added_tokens_) vocab_size_ = std::max(vocab_size_, t.id + 1);
  id_to_text_.resize(vocab_size_);
  for (uint32_t id = 0; id < model_.size(); ++id) {
    std::string text = model_.token_bytes(id);
    if (text.empty() && id < config.id_to_text.size()) text = config.id_to_text[id];
    if (!model_.byte_level()) text = sentencepiece_text(text, config.model.byte_fallback);
    id_to_text_[id] = std::move(text);
  }
  raw_added_.resize(256);
  normalized_added_.resize(256);
  for (const AddedToken& t : added_tokens_) {
    DB_REQUIRE(!t.content.empty(), "added token " + std::to_string(t.id) + " is empty");
    id_to_text_[t.id] = t.content;
    AddedPattern pattern{t.content, &t};
    if (t.normalized) {
      std::string buffer;
      pattern.text = std::string(normalize(t.content, buffer));
      if (pattern.text.empty()) continue;
    }
    (t.normalized ? normalized_added_ : raw_added_)[static_cast<unsigned char>(pattern.text[0])]
        .push_back(std::move(pattern));
    (t.normalized ? has_normalized_added_ : has_raw_added_) = true;
  }
  for (PatternIndex* index : {&raw_added_, &normalized_added_})
    for (auto& list : *index)
      std::stable_sort(list.begin(), list.end(), [](const AddedPattern& a, const AddedPattern& b) {
        return a.text.size() > b.text.size();
      });
  if (config.eod_id >= 0) set_eod_id(static_cast<uint32_t>(config.eod_id));
}

void BpeTokenizer::set_eod_id(uint32_t id) {
  DB_REQUIRE(id < vocab_size_, "end-of-document id " + std::to_string(id) +
                                   " is outside the vocabulary (" + std::to_string(vocab_size_) +
                                   " ids)");
  eod_id_ = id;
}

std::unique_ptr<Tokenizer> BpeTokenizer::clone() const {
  auto copy = std::unique_ptr<BpeTokenizer>(new BpeTokenizer(config_));
  copy->eod_id_ = eod_id_;
  copy->bos_id_ = bos_id_;
  return copy;
}

void BpeTokenizer::set_bos_id(uint32_t id) {
  DB_REQUIRE(id < vocab_size_, "beginning-of-sequence id " + std::to_string(id) +
                                   " is outside the vocabulary (" + std::to_string(vocab_size_) +
                                   " ids)");
  bos_id_ = id;
}

uint32_t BpeTokenizer::eod_id() const {
  DB_REQUIRE(eod_id_ >= 0, description_ +
                               ": no <|endoftext|> token; name the end-of-document token with "
                               "--eod-id or --eod-token");
  return static_cast<uint32_t>(eod_id_);
}

int64_t BpeTokenizer::token_id(std::string_view text) const {
  for (const AddedToken& t : added_tokens_)
    if (t.content == text) return t.id;
  return model_.find(text);
}

template <typename Rest>
void BpeTokenizer::split_on_added(std::string_view text, const PatternIndex& index,
                                  std::vector<uint32_t>& ids, Rest&& rest) {
  // Leftmost-longest matching, as Hugging Face's AddedVocabulary does.
  size_t plain_start = 0, p = 0;
  while (p < text.size()) {
    const AddedPattern* match = nullptr;
    for (const AddedPattern& t : index[static_cast<unsigned char>(text[p])]) {
      if (text.compare(p, t.text.size(), t.text) != 0) continue;
      if (t.token->single_word) {
        size_t end = p + t.text.size();
        if ((p > 0 && is_word_byte(text[p - 1])) || (end < text.size() && is_word_byte(text[end])))
          continue;
      }
      match = &t;
      break;
    }
    if (!match) {
      ++p;
      continue;
    }
    size_t begin = p, end = p + match->text.size();
    if (match->token->lstrip)
      while (begin > plain_start && is_space_byte(text[begin - 1])) --begin;
    if (match->token->rstrip)
      while (end < text.size() && is_space_byte(text[end])) ++end;
    if (begin > plain_start) rest(text.substr(plain_start, begin - plain_start), plain_start == 0);
    ids.push_back(match->token->id);
    plain_start = p = end;
  }
  if (plain_start < text.size()) rest(text.substr(plain_start), plain_start == 0);
}

std::string_view BpeTokenizer::normalize(std::string_view text, std::string& buffer) const {
  std::string next;
  for (const NormalizerStep& step : normalizer_) {
    switch (step.kind) {
      case NormalizerStep::Kind::unicode: {
        const icu::Normalizer2* normalizer = normalizer_for(step.form);
        if (!normalizer || is_ascii(text)) continue;
        next.clear();
        UErrorCode status = U_ZERO_ERROR;
        icu::StringByteSink<std::string> sink(&next);
        normalizer->normalizeUTF8(0,
                                  icu::StringPiece(text.data(), static_cast<int32_t>(text.size())),
                                  sink, nullptr, status);
        DB_REQUIRE(U_SUCCESS(status), std::string("ICU normalizer: ") + u_errorName(status));
        break;
      }
      case NormalizerStep::Kind::prepend:
        if (text.empty()) continue;  // Hugging Face prepends to non-empty text only
        next.assign(step.text);
        next.append(text);
        break;
      case NormalizerStep::Kind::replace: {
        if (step.text.empty() || text.find(step.text) == std::string_view::npos) continue;
        next.clear();
        for (size_t at = 0; at < text.size();) {
          size_t found = text.find(step.text, at);
          if (found == std::string_view::npos) found = text.size();
          next.append(text.substr(at, found - at));
          if (found == text.size()) break;
          next.append(step.replacement);
          at = found + step.text.size();
        }
        break;
      }
    }
    buffer.swap(next);
    text = buffer;
  }
  return text;
}

void BpeTokenizer::encode(std::string_view text, std::vector<uint32_t>& ids) {
  // Hugging Face's order: added tokens with normalized = false are cut out of the raw text; the
  // parts between them are normalized one by one; added tokens with normalized = true are cut
  // out of those; what remains is pre-tokenized and goes through the model.
  auto normalize_then_encode = [&](std::string_view segment, bool segment_at_start) {
    std::string buffer;
    std::string_view normalized = normalize(segment, buffer);
    if (has_normalized_added_)
      split_on_added(normalized, normalized_added_, ids,
                     [&](std::string_view part, bool part_at_start) {
                       encode_plain(part, segment_at_start && part_at_start, ids);
                     });
    else
      encode_plain(normalized, segment_at_start, ids);
  };
  if (has_raw_added_)
    split_on_added(text, raw_added_, ids, normalize_then_encode);
  else
    normalize_then_encode(text, true);
}

void BpeTokenizer::encode_plain(std::string_view text, bool at_document_start,
                                std::vector<uint32_t>& ids) {
  pre_tokenizer_.run(text, pieces_, at_document_start);
  for (std::string_view piece : pieces_) model_.encode_piece(piece, ids);
}

std::string BpeTokenizer::decode(std::span<const uint32_t> ids) const {
  std::string out;
  for (uint32_t id : ids) {
    DB_REQUIRE(id < id_to_text_.size(),
               "cannot decode id " + std::to_string(id) + ": outside the vocabulary");
    out += id_to_text_[id];
  }
  return out;
}

void ByteTokenizer::encode(std::string_view text, std::vector<uint32_t>& ids) {
  for (unsigned char b : text) ids.push_back(b);
}

std::string ByteTokenizer::decode(std::span<const uint32_t> ids) const {
  std::string out;
  for (uint32_t id : ids) {
    DB_REQUIRE(id < 257, "cannot decode id " + std::to_string(id) + ": byte vocabulary has 257");
    if (id < 256) out += static_cast<char>(id);
  }
  return out;
}

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec) {
  namespace fs = std::filesystem;
  if (spec == "bytes") return std::make_unique<ByteTokenizer>();
  fs::path path(spec);
  DB_REQUIRE(fs::exists(path), "tokenizer '" + spec +
                                   "' not found (give 'bytes', a tokenizer.json, an "
                                   "encoder.json with vocab.bpe beside it, or their directory)");
  if (fs::is_directory(path)) {
    if (fs::exists(path / "tokenizer.json")) return load_hf_tokenizer(path / "tokenizer.json");
    DB_REQUIRE(fs::exists(path / "encoder.json") && fs::exists(path / "vocab.bpe"),
               "directory " + spec + " holds neither tokenizer.json nor encoder.json + vocab.bpe");
    return load_gpt2_tokenizer(path / "encoder.json", path / "vocab.bpe");
  }
  if (path.filename() == "encoder.json") {
    fs::path merges = path.parent_path() / "vocab.bpe";
    DB_REQUIRE(fs::exists(merges),
               "GPT-2 encoder.json needs vocab.bpe beside it: " + merges.string() + " not found");
    return load_gpt2_tokenizer(spec, merges);
  }
  return load_hf_tokenizer(spec);
}

}  // namespace db::tokenizer
