#include "tokenizer/shard_files.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <regex>

#include "core/error.hpp"
#include "tokenizer/byte_stream.hpp"

namespace db::tokenizer {
namespace fs = std::filesystem;

std::string shard_name(const std::string& split, int64_t index, const ShardLayout& layout) {
  char number[32];
  std::snprintf(number, sizeof number, "_%06lld", static_cast<long long>(index));
  return split + number + data::token_file_extension(layout.format, layout.dtype_bytes);
}

bool is_tokenize_output(const std::string& file_name) {
  // Shards of this version, train_rankRRR shards of older ones, spools; each maybe with .tmp.
  static const std::regex pattern(
      R"(((train|val)_(rank)?[0-9]+\.(npy|u16|u32|bin)|\.spool-(train|val)-rank[0-9]+\.u(16|32))(\.tmp)?)");
  return std::regex_match(file_name, pattern);
}

std::vector<Shard> plan_shards(const std::string& split, int64_t total, const ShardLayout& layout) {
  const int64_t size = layout.shard_tokens > 0 ? layout.shard_tokens : std::max<int64_t>(total, 1);
  DB_REQUIRE(
      layout.format != data::TokenFormat::llmc_bin || size <= std::numeric_limits<int32_t>::max(),
      "llm.c shards hold at most 2147483647 tokens; the " + split + " split has " +
          std::to_string(total) + ": set --shard-tokens");
  std::vector<Shard> shards;
  for (int64_t begin = 0; begin < total || shards.empty(); begin += size)
    shards.push_back(
        {shard_name(split, int64_t(shards.size()), layout), begin, std::min(total, begin + size)});
  return shards;
}

std::string spool_path(const std::string& out_dir, const std::string& split, int rank,
                       int dtype_bytes) {
  char name[64];
  std::snprintf(name, sizeof name, ".spool-%s-rank%03d.u%d", split.c_str(), rank, dtype_bytes * 8);
  return (fs::path(out_dir) / name).string();
}

TokenSpool::TokenSpool(const std::string& out_dir, const std::string& split, int rank,
                       int dtype_bytes)
    : writer_(spool_path(out_dir, split, rank, dtype_bytes), data::TokenFormat::olmo_raw,
              dtype_bytes, std::nullopt) {}

TokenSpool::~TokenSpool() {
  std::error_code ignored;
  fs::remove(writer_.path(), ignored);
}

void write_shard(const Shard& shard, const std::string& out_dir, const ShardLayout& layout,
                 const std::vector<std::string>& spools, const std::vector<int64_t>& spool_starts) {
  data::TokenFileWriter out((fs::path(out_dir) / shard.name).string(), layout.format,
                            layout.dtype_bytes, shard.end - shard.begin);
  std::vector<char> buffer(1 << 20);
  for (std::size_t r = 0; r < spools.size(); ++r) {
    const int64_t begin = std::max(shard.begin, spool_starts[r]);
    const int64_t end = std::min(shard.end, spool_starts[r + 1]);
    if (begin >= end) continue;
    FileReader spool(spools[r], (begin - spool_starts[r]) * layout.dtype_bytes);
    for (int64_t left = (end - begin) * layout.dtype_bytes; left > 0;) {
      const std::size_t n =
          spool.read(buffer.data(), static_cast<std::size_t>(std::min<int64_t>(left, 1 << 20)));
      DB_REQUIRE(n > 0, "spool " + spools[r] + " is shorter than its rank reported");
      out.append_bytes(buffer.data(), n);
      left -= static_cast<int64_t>(n);
    }
  }
  out.commit();
}

}  // namespace db::tokenizer
