#include "tokenizer/tokenizer.hpp"

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>

#include <algorithm>
#include <cctype>
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

}  // namespace

BpeTokenizer::BpeTokenizer(BpeTokenizerConfig config)
    : BpeTokenizer(std::make_shared<const BpeTokenizerConfig>(std::move(config))) {}

BpeTokenizer::BpeTokenizer(std::shared_ptr<const BpeTokenizerConfig> shared)
    : config_(std::move(shared)),
      model_(config_->id_to_bytes, config_->merges, config_->ignore_merges),
      added_tokens_(config_->added_tokens),
      normalization_(config_->normalization),
      pre_tokenizer_(config_->pre_tokenizer),
      add_prefix_space_(config_->add_prefix_space),
      description_(config_->description) {
  const BpeTokenizerConfig& config = *config_;
  normalizer_for(normalization_);  // fail early when ICU lacks the data
  vocab_size_ = model_.size();
  for (const AddedToken& t : added_tokens_) vocab_size_ = std::max(vocab_size_, t.id + 1);
  id_to_text_.resize(vocab_size_);
  for (uint32_t id = 0; id < model_.size(); ++id) id_to_text_[id] = model_.token_bytes(id);
  added_by_first_byte_.resize(256);
  for (const AddedToken& t : added_tokens_) {
    DB_REQUIRE(!t.content.empty(), "added token " + std::to_string(t.id) + " is empty");
    id_to_text_[t.id] = t.content;
    added_by_first_byte_[static_cast<unsigned char>(t.content[0])].push_back(&t);
    (t.normalized && normalization_ != Normalization::none ? has_normalized_added_
                                                           : has_raw_added_) = true;
  }
  for (auto& list : added_by_first_byte_)
    std::stable_sort(list.begin(), list.end(), [](const AddedToken* a, const AddedToken* b) {
      return a->content.size() > b->content.size();
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
void BpeTokenizer::split_on_added(std::string_view text, bool normalized_kind,
                                  std::vector<uint32_t>& ids, Rest&& rest) {
  // Leftmost-longest matching, as Hugging Face's AddedVocabulary does.
  size_t plain_start = 0, p = 0;
  while (p < text.size()) {
    const AddedToken* match = nullptr;
    for (const AddedToken* t : added_by_first_byte_[static_cast<unsigned char>(text[p])]) {
      bool kind = t->normalized && normalization_ != Normalization::none;
      if (kind != normalized_kind || text.compare(p, t->content.size(), t->content) != 0) continue;
      if (t->single_word) {
        size_t end = p + t->content.size();
        if ((p > 0 && is_word_byte(text[p - 1])) || (end < text.size() && is_word_byte(text[end])))
          continue;
      }
      match = t;
      break;
    }
    if (!match) {
      ++p;
      continue;
    }
    size_t begin = p, end = p + match->content.size();
    if (match->lstrip)
      while (begin > plain_start && is_space_byte(text[begin - 1])) --begin;
    if (match->rstrip)
      while (end < text.size() && is_space_byte(text[end])) ++end;
    if (begin > plain_start) rest(text.substr(plain_start, begin - plain_start));
    ids.push_back(match->id);
    plain_start = p = end;
  }
  if (plain_start < text.size()) rest(text.substr(plain_start));
}

void BpeTokenizer::encode(std::string_view text, std::vector<uint32_t>& ids) {
  auto normalize_then_encode = [&](std::string_view segment) {
    const icu::Normalizer2* normalizer = normalizer_for(normalization_);
    std::string normalized;
    if (normalizer && !is_ascii(segment)) {
      UErrorCode status = U_ZERO_ERROR;
      icu::StringByteSink<std::string> sink(&normalized);
      normalizer->normalizeUTF8(
          0, icu::StringPiece(segment.data(), static_cast<int32_t>(segment.size())), sink, nullptr,
          status);
      DB_REQUIRE(U_SUCCESS(status), std::string("ICU normalizer: ") + u_errorName(status));
      segment = normalized;
    }
    if (has_normalized_added_)
      split_on_added(segment, true, ids, [&](std::string_view s) { encode_plain(s, ids); });
    else
      encode_plain(segment, ids);
  };
  if (has_raw_added_)
    split_on_added(text, false, ids, normalize_then_encode);
  else
    normalize_then_encode(text);
}

void BpeTokenizer::encode_plain(std::string_view text, std::vector<uint32_t>& ids) {
  std::string prefixed;
  if (add_prefix_space_ && !text.empty() && text[0] != ' ') {
    prefixed.reserve(text.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(text);
    text = prefixed;
  }
  pre_tokenizer_.run(text, pieces_);
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
