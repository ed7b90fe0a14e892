// The output shards of `depthbench tokenize` (doc/tokenize.md, "Output"). While documents are
// encoded, every rank appends its ids of a split to a spool file beside the output; once every
// rank is done, the split's ids — the spools in rank order, which is input order — are cut into
// shards of at most `shard_tokens` ids. So shard names and bytes depend only on the corpus and
// the options, never on the number of ranks or threads.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/token_format.hpp"
#include "data/token_writer.hpp"

namespace db::tokenizer {

struct ShardLayout {
  data::TokenFormat format = data::TokenFormat::npy;
  int dtype_bytes = 2;
  int64_t shard_tokens = 0;  // at most this many ids per shard; 0: one shard per split
};

// SPLIT_NNNNNN.EXT, NNNNNN the shard's number from 0 (e.g. train_000000.npy, val_000003.bin).
std::string shard_name(const std::string& split, int64_t index, const ShardLayout& layout);
// A file a previous tokenize run may have left in its output folder: a shard or a spool.
bool is_tokenize_output(const std::string& file_name);

struct Shard {
  std::string name;
  int64_t begin = 0, end = 0;  // the split's ids [begin, end)
};
// Shards of `total` ids: full ones, then the rest; one (maybe empty) shard when total is 0.
std::vector<Shard> plan_shards(const std::string& split, int64_t total, const ShardLayout& layout);

// One rank's ids of one split, in order. The file is removed when the spool is destroyed.
class TokenSpool {
 public:
  TokenSpool(const std::string& out_dir, const std::string& split, int rank, int dtype_bytes);
  ~TokenSpool();
  TokenSpool(const TokenSpool&) = delete;
  TokenSpool& operator=(const TokenSpool&) = delete;
  void append(std::span<const uint32_t> ids) { writer_.append(ids); }
  void finish() { writer_.commit(/*durable=*/false); }
  int64_t tokens() const { return writer_.tokens_written(); }
  const std::string& path() const { return writer_.path(); }

 private:
  data::TokenFileWriter writer_;
};

// The spool file name of `rank` for `split`; every rank can compute every other's.
std::string spool_path(const std::string& out_dir, const std::string& split, int rank,
                       int dtype_bytes);

// Writes `shard` into out_dir from the spools: spool r holds the split's ids
// [spool_starts[r], spool_starts[r + 1]).
void write_shard(const Shard& shard, const std::string& out_dir, const ShardLayout& layout,
                 const std::vector<std::string>& spools, const std::vector<int64_t>& spool_starts);

}  // namespace db::tokenizer
