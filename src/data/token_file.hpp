// One token file, memory-mapped and validated once at open (spec doc/data.md: "Every
// reader checks what it can ... and stops with a one-line error naming the file and the
// problem"). After construction every token is known to be readable and < vocab_size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "data/mapped_file.hpp"
#include "data/token_format.hpp"

namespace db::data {

class TokenFile {
 public:
  // Maps `path`, resolves the format (auto_detect looks at the content), checks the header and
  // the size against the dtype, and, when options.vocab_size > 0, every id. Throws db::Error
  // "token file 'PATH': PROBLEM" where PROBLEM starts with one of: missing, empty, size ... not a
  // multiple, truncated, trailing bytes, wrong dtype, bad llm.c magic, not a .npy file,
  // malformed .npy header, not 1-D, token id ... >= vocab_size, its name says, read as uint16.
  TokenFile(const std::string& path, const TokenFileOptions& options);

  const std::string& path() const { return mapped_.path(); }
  TokenFormat format() const { return format_; }    // never auto_detect
  int dtype_bytes() const { return dtype_bytes_; }  // 2 (uint16) or 4 (uint32)
  int64_t num_tokens() const { return num_tokens_; }
  int32_t llmc_version() const { return llmc_version_; }  // header word [1]; 0 for other formats

  uint32_t token(int64_t index) const;
  // Copies tokens [first, first + out.size()) into `out`; the range must lie inside the file.
  void read_tokens(int64_t first, std::span<int32_t> out) const;

 private:
  void open_npy(std::span<const std::byte> bytes);
  void open_llmc(std::span<const std::byte> bytes);
  void open_raw(std::span<const std::byte> bytes, int requested_dtype_bytes);
  void refuse_uint32_read_as_uint16() const;
  void check_vocabulary(int64_t vocab_size) const;

  MappedFile mapped_;
  TokenFormat format_ = TokenFormat::olmo_raw;
  int dtype_bytes_ = 2;
  int64_t num_tokens_ = 0;
  int32_t llmc_version_ = 0;
  const std::byte* tokens_ = nullptr;  // first token inside the mapping
};

}  // namespace db::data
