// Writers of token files, used by the tokenizer (spec doc/data.md). Every writer is
// atomic like the run file and checkpoints: it writes PATH.tmp, fsyncs it, and renames it to
// PATH, so a crash never leaves a file that looks complete.
// Each refuses an id that does not fit the dtype.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "data/token_format.hpp"

namespace db::data {

// One token file written in pieces: the header (which needs the final token count for npy and
// llm.c) at construction, then ids or already-narrowed id bytes, then commit(), which checks
// that exactly `tokens` ids arrived. A writer destroyed before commit() removes PATH.tmp.
class TokenFileWriter {
 public:
  // `tokens` may be left unknown only for headerless (olmo_raw) files.
  TokenFileWriter(std::string path, TokenFormat format, int dtype_bytes,
                  std::optional<int64_t> tokens);
  ~TokenFileWriter();
  TokenFileWriter(const TokenFileWriter&) = delete;
  TokenFileWriter& operator=(const TokenFileWriter&) = delete;

  void append(std::span<const uint32_t> ids);             // narrowed to the dtype, checked to fit
  void append_bytes(const void* data, std::size_t size);  // ids already in the dtype
  // `durable`: fsync file and folder (skipped for scratch files that never outlive a run).
  void commit(bool durable = true);
  int64_t tokens_written() const { return written_bytes_ / dtype_bytes_; }
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void fail(const char* what);
  void write(const void* data, std::size_t size);

  std::string path_, temp_path_;
  int dtype_bytes_;
  std::optional<int64_t> expected_tokens_;
  int fd_ = -1;
  bool committed_ = false;
  int64_t written_bytes_ = 0;
  std::vector<uint16_t> narrow_;  // scratch for uint16 output
};

// OLMo-core layout: the ids as a flat, headerless little-endian array of dtype_bytes (2 = uint16,
// 4 = uint32) each.
void write_olmo_raw(const std::string& path, std::span<const uint32_t> ids, int dtype_bytes);

// NumPy .npy version 1.0, 1-D, descr '<u2' or '<u4', loadable with numpy.load.
void write_npy(const std::string& path, std::span<const uint32_t> ids, int dtype_bytes);

// llm.c shard: 256 int32 header words (magic 20240520 with version 1 for uint16, 20240801 with
// version 7 for uint32, as llm.c's dev/data/data_common.py writes them; token count), then the
// ids. The count is an int32, so at most 2^31 - 1 tokens.
void write_llmc_bin(const std::string& path, std::span<const uint32_t> ids, int dtype_bytes);

}  // namespace db::data
