// One output shard of token ids (spec: doc/data.md, "Token data the trainer must read"):
// OLMo raw (headerless little-endian uint16/uint32) or NumPy .npy v1.0. Written to PATH.tmp and
// renamed by commit(), so a shard that exists under its final name is complete.
#pragma once
#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

namespace db::tokenizer {

enum class OutputFormat { olmo, npy };
OutputFormat parse_output_format(const std::string& name);  // "olmo", "npy"
std::string to_string(OutputFormat format);
// ".npy" for NumPy files; ".u16"/".u32" for headerless arrays, whose name is all that says
// their dtype.
std::string shard_extension(OutputFormat format, int dtype_bytes);

class TokenShardWriter {
 public:
  TokenShardWriter(std::string path, OutputFormat format, int dtype_bytes);
  ~TokenShardWriter();  // removes the .tmp file unless committed
  TokenShardWriter(const TokenShardWriter&) = delete;
  TokenShardWriter& operator=(const TokenShardWriter&) = delete;

  void append(std::span<const uint32_t> ids);
  void commit();
  int64_t tokens() const { return tokens_; }
  const std::string& path() const { return path_; }

 private:
  void write_bytes(const void* data, size_t size);
  void write_npy_header();

  std::string path_, tmp_path_;
  OutputFormat format_;
  int dtype_bytes_;
  std::FILE* file_ = nullptr;
  int64_t tokens_ = 0;
  bool committed_ = false;
  std::vector<uint16_t> narrow_;  // scratch for uint16 conversion
};

}  // namespace db::tokenizer
