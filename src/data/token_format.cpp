#include "data/token_format.hpp"

#include <cstring>

#include "core/error.hpp"
#include "data/npy_header.hpp"

namespace db::data {

std::string to_string(TokenFormat format) {
  switch (format) {
    case TokenFormat::auto_detect:
      return "auto";
    case TokenFormat::olmo_raw:
      return "olmo";
    case TokenFormat::npy:
      return "npy";
    case TokenFormat::llmc_bin:
      return "llmc";
  }
  return "unknown";
}

TokenFormat parse_token_format(const std::string& name) {
  for (TokenFormat format :
       {TokenFormat::auto_detect, TokenFormat::olmo_raw, TokenFormat::npy, TokenFormat::llmc_bin}) {
    if (to_string(format) == name) return format;
  }
  DB_REQUIRE(false, "unknown token format '" + name + "' (expected auto, olmo, npy or llmc)");
  return TokenFormat::auto_detect;
}

std::string token_file_extension(TokenFormat format, int dtype_bytes) {
  DB_REQUIRE(format != TokenFormat::auto_detect, "a token file to write needs a layout, not auto");
  if (format == TokenFormat::npy) return ".npy";
  if (format == TokenFormat::llmc_bin) return ".bin";
  return dtype_bytes == 2 ? ".u16" : ".u32";
}

int raw_dtype_from_name(const std::string& path) {
  if (path.ends_with(".u16")) return 2;
  if (path.ends_with(".u32")) return 4;
  return 0;
}

TokenFormat detect_token_format(std::span<const std::byte> bytes) {
  if (has_npy_magic(bytes)) return TokenFormat::npy;
  if (bytes.size() >= 4) {
    int32_t magic = 0;
    std::memcpy(&magic, bytes.data(), 4);
    // A raw uint16 file could only look like this if its first two ids were 54488 and 308 (or,
    // for uint32, if its first id were over 20 million): impossible with V = 50 280, and any
    // such file would then fail the llm.c size check loudly rather than be misread silently.
    if (magic == llmc_magic_uint16 || magic == llmc_magic_uint32) return TokenFormat::llmc_bin;
  }
  return TokenFormat::olmo_raw;
}

}  // namespace db::data
