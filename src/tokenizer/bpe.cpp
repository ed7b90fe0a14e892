#include "tokenizer/bpe.hpp"

#include <limits>
#include <queue>
#include <tuple>

#include "core/error.hpp"
#include "tokenizer/byte_level.hpp"

namespace db::tokenizer {
namespace {
constexpr size_t kMaxCacheEntries = 1 << 21;
constexpr size_t kMaxCachedPieceBytes = 256;  // longer pieces are rare; not worth caching
}  // namespace

BpeModel::BpeModel(std::vector<std::string> id_to_bytes,
                   const std::vector<std::pair<std::string, std::string>>& merges,
                   bool ignore_merges)
    : id_to_bytes_(std::move(id_to_bytes)), ignore_merges_(ignore_merges) {
  bytes_to_id_.reserve(id_to_bytes_.size());
  for (uint32_t id = 0; id < id_to_bytes_.size(); ++id) {
    if (id_to_bytes_[id].empty()) continue;
    // The lowest id wins when a byte string appears twice, as it would in a lookup table.
    bytes_to_id_.emplace(id_to_bytes_[id], id);
  }
  for (int b = 0; b < 256; ++b) {
    int64_t id = find(std::string(1, static_cast<char>(b)));
    DB_REQUIRE(id >= 0, "BPE vocabulary lacks the single-byte token for byte " + std::to_string(b) +
                            " ('" + bytes_to_vocab_text(std::string(1, b)) +
                            "'): not a byte-level vocabulary");
    byte_ids_[b] = static_cast<uint32_t>(id);
  }
  merges_.reserve(merges.size());
  for (uint32_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    int64_t a = find(left), b = find(right), merged = find(left + right);
    DB_REQUIRE(a >= 0 && b >= 0 && merged >= 0,
               "BPE merge " + std::to_string(rank + 1) + " ('" + bytes_to_vocab_text(left) + " " +
                   bytes_to_vocab_text(right) + "') uses a token outside the vocabulary");
    // A repeated merge keeps its first (lowest) rank.
    merges_.emplace(pair_key(uint32_t(a), uint32_t(b)), Merge{rank, uint32_t(merged)});
  }
}

int64_t BpeModel::find(std::string_view bytes) const {
  auto it = bytes_to_id_.find(std::string(bytes));
  return it == bytes_to_id_.end() ? -1 : int64_t(it->second);
}

void BpeModel::encode_piece(std::string_view piece, std::vector<uint32_t>& ids) {
  if (piece.size() == 1) {
    ids.push_back(byte_ids_[static_cast<unsigned char>(piece[0])]);
    return;
  }
  if (ignore_merges_) {
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
  const int n = static_cast<int>(piece.size());
  if (n == 0) return;
  std::vector<Symbol> symbols(n);
  for (int i = 0; i < n; ++i)
    symbols[i] = {byte_ids_[static_cast<unsigned char>(piece[i])], i - 1, i + 1 < n ? i + 1 : -1};
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
    symbols[right].id = std::numeric_limits<uint32_t>::max();  // dead
    symbols[left].next = symbols[right].next;
    if (symbols[right].next >= 0) symbols[symbols[right].next].prev = left;
    if (symbols[left].prev >= 0) push(symbols[left].prev);
    push(left);
  }
  for (int i = 0; i >= 0; i = symbols[i].next) ids.push_back(symbols[i].id);
}

void BpeModel::encode_piece_ref(std::string_view piece, std::vector<uint32_t>& ids) const {
  if (int64_t whole = find(piece); ignore_merges_ && whole >= 0) {
    ids.push_back(static_cast<uint32_t>(whole));
    return;
  }
  std::vector<uint32_t> word;
  for (unsigned char b : piece) word.push_back(byte_ids_[b]);
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
