// The BPE model of a byte-level tokenizer: a vocabulary of byte strings and a ranked list of
// merges. A pre-token's bytes start as single-byte tokens; the adjacent pair with the lowest
// merge rank (leftmost on ties) is merged until no pair has a rank — the rule of GPT-2's
// encoder.py and of Hugging Face tokenizers. Results are cached per distinct pre-token. With
// `ignore_merges` (Llama-3), a pre-token that is itself a vocabulary entry is that one token,
// whatever the merges would have made of it.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace db::tokenizer {

class BpeModel {
 public:
  // `id_to_bytes[id]` is the raw byte string of token `id` (empty: unused id). Merges are pairs
  // of raw byte strings in rank order. Throws db::Error when a byte has no single-byte token or
  // a merge names a string outside the vocabulary.
  BpeModel(std::vector<std::string> id_to_bytes,
           const std::vector<std::pair<std::string, std::string>>& merges,
           bool ignore_merges = false);

  // Appends the token ids of one pre-token.
  void encode_piece(std::string_view piece, std::vector<uint32_t>& ids);
  // Reference twin without the cache and heap: GPT-2's loop, merging every occurrence of the
  // lowest-ranked pair per pass (ignore_merges honoured).
  void encode_piece_ref(std::string_view piece, std::vector<uint32_t>& ids) const;

  const std::string& token_bytes(uint32_t id) const { return id_to_bytes_[id]; }
  uint32_t size() const { return static_cast<uint32_t>(id_to_bytes_.size()); }
  // Id of a byte string in the vocabulary, or -1.
  int64_t find(std::string_view bytes) const;
  size_t merge_count() const { return merges_.size(); }
  bool ignore_merges() const { return ignore_merges_; }

 private:
  struct Merge {
    uint32_t rank;
    uint32_t merged_id;
  };
  static uint64_t pair_key(uint32_t a, uint32_t b) { return (uint64_t(a) << 32) | b; }
  const Merge* find_merge(uint32_t a, uint32_t b) const {
    auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  }
  void merge_uncached(std::string_view piece, std::vector<uint32_t>& ids) const;

  std::vector<std::string> id_to_bytes_;
  std::unordered_map<std::string, uint32_t> bytes_to_id_;
  std::array<uint32_t, 256> byte_ids_{};
  std::unordered_map<uint64_t, Merge> merges_;
  bool ignore_merges_;

  // Cache: pre-token bytes -> [offset, length) in cache_ids_. Cleared when it grows too large,
  // so memory stays bounded on web-scale corpora.
  std::unordered_map<std::string, std::pair<uint32_t, uint32_t>> cache_;
  std::vector<uint32_t> cache_ids_;
};

}  // namespace db::tokenizer
