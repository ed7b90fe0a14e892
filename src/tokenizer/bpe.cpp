#include "tokenizer/bpe.hpp"

#include <cstdio>
#include <queue>
#include <tuple>

#include "core/error.hpp"
#include "tokenizer/byte_level.hpp"
#include "util/utf8.hpp"

namespace db::tokenizer {
namespace {
constexpr size_t kMaxCacheEntries = 1 << 21;
constexpr size_t kMaxCachedPieceBytes = 256;  // longer pieces are rare; not worth caching

std::string hex_byte(unsigned char b) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02X", static_cast<unsigned>(b));
  return text;
}
}  // namespace

BpeModel::BpeModel(std::vector<std::string> id_to_bytes,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeModelOptions options)
    : id_to_bytes_(std::move(id_to_bytes)), options_(options) {
  bytes_to_id_.reserve(id_to_bytes_.size());
  for (uint32_t id = 0; id < id_to_bytes_.size(); ++id) {
    if (id_to_bytes_[id].empty()) continue;
    // The lowest id wins when a string appears twice, as it would in a lookup table.
    bytes_to_id_.emplace(id_to_bytes_[id], id);
  }
  for (int b = 0; b < 256; ++b) {
    // Byte-level: the single-byte token; characters: the <0xNN> token of byte_fallback.
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    int64_t id = options_.byte_level ? find(std::string(1, static_cast<char>(b))) : find(name);
    byte_ids_[b] = id >= 0 ? static_cast<uint32_t>(id) : kNoToken;
  }
  DB_REQUIRE(options_.unk_id < int64_t(id_to_bytes_.size()),
             "the unknown token's id is outside the vocabulary");
  merges_.reserve(merges.size());
  auto spelled = [&](const std::string& s) {
    return options_.byte_level ? bytes_to_vocab_text(s) : s;
  };
  for (uint32_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    int64_t a = find(left), b = find(right), merged = find(left + right);
    DB_REQUIRE(a >= 0 && b >= 0 && merged >= 0, "BPE merge " + std::to_string(rank + 1) + " ('" +
                                                    spelled(left) + " " + spelled(right) +
                                                    "') uses a token outside the vocabulary");
    // A repeated merge keeps its first (lowest) rank.
    merges_.emplace(pair_key(uint32_t(a), uint32_t(b)), Merge{rank, uint32_t(merged)});
  }
}

int64_t BpeModel::find(std::string_view bytes) const {
  auto it = bytes_to_id_.find(std::string(bytes));
  return it == bytes_to_id_.end() ? -1 : int64_t(it->second);
}

void BpeModel::initial_symbols(std::string_view piece, std::vector<uint32_t>& symbols) const {
  symbols.clear();
  if (options_.byte_level) {
    for (unsigned char b : piece) {
      DB_REQUIRE(byte_ids_[b] != kNoToken,
                 "no token for byte " + hex_byte(b) +
                     ": the byte-level vocabulary lacks its single-byte token (valid UTF-8 "
                     "never holds 0xC0, 0xC1 or 0xF5-0xFF; other bytes need one)");
      symbols.push_back(byte_ids_[b]);
    }
    return;
  }
  // Hugging Face's BPE::merge_word: a pending unknown token is written before the next known
  // character, but not before byte-fallback tokens.
  int64_t pending_unk = -1;
  for (size_t pos = 0; pos < piece.size();) {
    size_t length = well_formed_length(piece, pos);
    if (length == 0) length = 1;  // not reached: the text is valid UTF-8
    std::string_view character = piece.substr(pos, length);
    pos += length;
    if (int64_t id = find(character); id >= 0) {
      if (pending_unk >= 0) symbols.push_back(uint32_t(pending_unk));
      pending_unk = -1;
      symbols.push_back(uint32_t(id));
      continue;
    }
    if (options_.byte_fallback) {
      bool all = true;
      for (unsigned char b : character) all = all && byte_ids_[b] != kNoToken;
      if (all) {
        for (unsigned char b : character) symbols.push_back(byte_ids_[b]);
        continue;
      }
    }
    if (options_.unk_id < 0) {
      size_t at = 0;
      char code[16];
      std::snprintf(code, sizeof code, "U+%04X",
                    static_cast<unsigned>(next_code_point(character, at)));
      DB_REQUIRE(false, std::string("no token for the character ") + code +
                            ": it is not in the vocabulary, and the tokenizer has neither "
                            "byte_fallback nor an unk_token");
    }
    if (pending_unk >= 0 && !options_.fuse_unk) symbols.push_back(uint32_t(pending_unk));
    pending_unk = options_.unk_id;
  }
  if (pending_unk >= 0) symbols.push_back(uint32_t(pending_unk));
}

void BpeModel::encode_piece(std::string_view piece, std::vector<uint32_t>& ids) {
  if (piece.size() == 1 && options_.byte_level) {
    const unsigned char b = static_cast<unsigned char>(piece[0]);
    if (byte_ids_[b] != kNoToken) {
      ids.push_back(byte_ids_[b]);
      return;
    }
  }
  if (options_.ignore_merges) {
    if (int64_t whole = find(piece); whole >= 0) {
      ids.push_back(static_cast<uint32_t>(whole));
      return;
    }
  }
  if (piece.size() > kMaxCachedPieceBytes) {
    merge_uncached(piece, ids);
    return;
  }
  auto it = cache_.find(std::string(piece));
  if (it != cache_.end()) {
    ids.insert(ids.end(), cache_ids_.begin() + it->second.first,
               cache_ids_.begin() + it->second.first + it->second.second);
    return;
  }
  size_t before = ids.size();
  merge_uncached(piece, ids);
  if (cache_.size() >= kMaxCacheEntries) {
    cache_.clear();
    cache_ids_.clear();
  }
  uint32_t offset = static_cast<uint32_t>(cache_ids_.size());
  cache_ids_.insert(cache_ids_.end(), ids.begin() + before, ids.end());
  cache_.emplace(std::string(piece), std::make_pair(offset, uint32_t(ids.size() - before)));
}

void BpeModel::merge_uncached(std::string_view piece, std::vector<uint32_t>& ids) const {
  // Symbols form a doubly linked list over positions; candidate pairs sit in a min-heap keyed
  // by (rank, position) and are validated lazily when popped.
  struct Symbol {
    uint32_t id;
    int prev, next;
  };
  std::vector<uint32_t> start;
  initial_symbols(piece, start);
  const int n = static_cast<int>(start.size());
  if (n == 0) return;
  std::vector<Symbol> symbols(n);
  for (int i = 0; i < n; ++i) symbols[i] = {start[i], i - 1, i + 1 < n ? i + 1 : -1};
  using Candidate = std::tuple<uint32_t, int, uint32_t, uint32_t>;  // rank, left pos, ids
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  auto push = [&](int left) {
    int right = symbols[left].next;
    if (right < 0) return;
    if (const Merge* m = find_merge(symbols[left].id, symbols[right].id))
      heap.emplace(m->rank, left, symbols[left].id, symbols[right].id);
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    auto [rank, left, left_id, right_id] = heap.top();
    heap.pop();
    int right = symbols[left].next;
    // Stale: the left symbol was merged away or changed, or its right neighbour changed.
    if (symbols[left].id != left_id || right < 0 || symbols[right].id != right_id) continue;
    symbols[left].id = find_merge(left_id, right_id)->merged_id;
    symbols[right].id = kNoToken;  // dead
    symbols[left].next = symbols[right].next;
    if (symbols[right].next >= 0) symbols[symbols[right].next].prev = left;
    if (symbols[left].prev >= 0) push(symbols[left].prev);
    push(left);
  }
  for (int i = 0; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
}

void BpeModel::encode_piece_ref(std::string_view piece, std::vector<uint32_t>& ids) const {
  if (int64_t whole = find(piece); options_.ignore_merges && whole >= 0) {
    ids.push_back(static_cast<uint32_t>(whole));
    return;
  }
  std::vector<uint32_t> word;
  initial_symbols(piece, word);
  while (word.size() > 1) {
    const Merge* best = nullptr;
    size_t best_at = 0;
    for (size_t i = 0; i + 1 < word.size(); ++i) {
      const Merge* m = find_merge(word[i], word[i + 1]);
      if (m && (!best || m->rank < best->rank)) best = m, best_at = i;
    }
    if (!best) break;
    uint32_t first = word[best_at], second = word[best_at + 1];
    std::vector<uint32_t> merged;
    for (size_t i = 0; i < word.size();) {
      if (i + 1 < word.size() && word[i] == first && word[i + 1] == second) {
        merged.push_back(best->merged_id);
        i += 2;
      } else {
        merged.push_back(word[i++]);
      }
    }
    word.swap(merged);
  }
  ids.insert(ids.end(), word.begin(), word.end());
}

}  // namespace db::tokenizer
