// The BPE model of Hugging Face tokenizers and GPT-2: a vocabulary of strings and a ranked list
// of merges. A pre-token starts as a row of symbols; the adjacent pair with the lowest merge rank
// (leftmost on ties) is merged until no pair has a rank — the rule of GPT-2's encoder.py and of
// Hugging Face tokenizers. Results are cached per distinct pre-token. With `ignore_merges`
// (Llama-3), a pre-token that is itself a vocabulary entry is that one token, whatever the merges
// would have made of it.
//
// The symbols a pre-token starts as depend on the kind of vocabulary:
// - byte-level (GPT-2, GPT-NeoX, Llama-3): one symbol per byte; vocabulary entries are raw bytes.
//   A byte without a single-byte token is an error when met (GPT-NeoX has none for the bytes
//   valid UTF-8 never contains, 0xC0, 0xC1, 0xF5-0xFF).
// - characters (SentencePiece-style BPE: Llama-2, Mistral, Gemma): one symbol per UTF-8
//   character, looked up as text; a character outside the vocabulary becomes its bytes as
//   <0xNN> tokens with `byte_fallback`, else the unknown token (consecutive ones fused into one
//   with `fuse_unk`), else an error — Hugging Face's BPE::merge_word.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace db::tokenizer {

struct BpeModelOptions {
  bool byte_level = true;      // symbols start as bytes; false: as characters
  bool ignore_merges = false;  // a pre-token in the vocabulary is that one token
  bool byte_fallback = false;  // characters: unknown ones become <0xNN> byte tokens
  int64_t unk_id = -1;         // characters: the unknown token, or none (-1)
  bool fuse_unk = false;       // characters: consecutive unknown characters give one unk
};

class BpeModel {
 public:
  // `id_to_bytes[id]` is the string of token `id` (raw bytes for a byte-level vocabulary; empty:
  // an id the model never produces). Merges are pairs of such strings in rank order. Throws
  // db::Error when a merge names a string outside the vocabulary.
  BpeModel(std::vector<std::string> id_to_bytes,
           const std::vector<std::pair<std::string, std::string>>& merges,
           BpeModelOptions options = {});

  // Appends the token ids of one pre-token. Throws db::Error for a byte or character that has
  // no token (see above).
  void encode_piece(std::string_view piece, std::vector<uint32_t>& ids);
  // Reference twin without the cache and heap: GPT-2's loop, merging every occurrence of the
  // lowest-ranked pair per pass (ignore_merges honoured).
  void encode_piece_ref(std::string_view piece, std::vector<uint32_t>& ids) const;

  const std::string& token_bytes(uint32_t id) const { return id_to_bytes_[id]; }
  uint32_t size() const { return static_cast<uint32_t>(id_to_bytes_.size()); }
  // Id of a string in the vocabulary, or -1.
  int64_t find(std::string_view bytes) const;
  size_t merge_count() const { return merges_.size(); }
  bool ignore_merges() const { return options_.ignore_merges; }
  bool byte_level() const { return options_.byte_level; }
  // Byte-level: whether byte `b` has a single-byte token.
  bool has_byte(unsigned char b) const { return byte_ids_[b] != kNoToken; }

 private:
  static constexpr uint32_t kNoToken = 0xFFFFFFFFu;
  struct Merge {
    uint32_t rank;
    uint32_t merged_id;
  };
  static uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t(a) << 32) | b; }
  const Merge* find_merge(uint32_t a, uint32_t b) const {
    auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  }
  // The symbols `piece` starts as, before any merge.
  void initial_symbols(std::string_view piece, std::vector<uint32_t>& symbols) const;
  void merge_uncached(std::string_view piece, std::vector<uint32_t>& ids) const;

  std::vector<std::string> id_to_bytes_;
  std::unordered_map<std::string, uint32_t> bytes_to_id_;
  std::array<uint32_t, 256> byte_ids_{};  // byte-level: byte -> id; characters: <0xNN> -> id
  std::unordered_map<uint64_t, Merge> merges_;
  BpeModelOptions options_;

  // Cache: pre-token bytes -> [offset, length) in cache_ids_. Cleared when it grows too large,
  // so memory stays bounded on web-scale corpora.
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> cache_;
  std::vector<uint32_t> cache_ids_;
};

}  // namespace db::tokenizer
