#include "tokenizer/token_writer.hpp"

#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"

namespace db::tokenizer {
namespace {
constexpr size_t kNpyHeaderBytes = 128;  // fixed, so the final shape can be written in place
}

OutputFormat parse_output_format(const std::string& name) {
  if (name == "olmo") return OutputFormat::olmo;
  if (name == "npy") return OutputFormat::npy;
  DB_REQUIRE(false, "unknown output format '" + name + "' (olmo, npy)");
  return OutputFormat::olmo;
}

std::string to_string(OutputFormat format) {
  return format == OutputFormat::npy ? "npy" : "olmo";
}

std::string shard_extension(OutputFormat format, int dtype_bytes) {
  if (format == OutputFormat::npy) return ".npy";
  return dtype_bytes == 2 ? ".u16" : ".u32";
}

TokenShardWriter::TokenShardWriter(std::string path, OutputFormat format, int dtype_bytes)
    : path_(std::move(path)),
      tmp_path_(path_ + ".tmp"),
      format_(format),
      dtype_bytes_(dtype_bytes) {
  DB_REQUIRE(dtype_bytes == 2 || dtype_bytes == 4, "token dtype must be 2 or 4 bytes");
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  DB_REQUIRE(file_, "cannot create " + tmp_path_ + ": " + std::strerror(errno));
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  if (format_ == OutputFormat::npy) write_npy_header();
}

TokenShardWriter::~TokenShardWriter() {
  if (file_) std::fclose(file_);
  if (!committed_) std::remove(tmp_path_.c_str());
}

void TokenShardWriter::write_bytes(const void* data, size_t size) {
  DB_REQUIRE(std::fwrite(data, 1, size, file_) == size,
             "cannot write " + tmp_path_ + ": " + std::strerror(errno));
}

void TokenShardWriter::write_npy_header() {
  // NumPy format 1.0: magic, version, little-endian header length, then a Python dict literal
  // padded with spaces and ending in '\n' so that the data starts 64-byte aligned.
  std::string dict = std::string("{'descr': '") + (dtype_bytes_ == 2 ? "<u2" : "<u4") +
                     "', 'fortran_order': False, 'shape': (" + std::to_string(tokens_) + ",), }";
  const size_t dict_bytes = kNpyHeaderBytes - 10;
  dict.resize(dict_bytes - 1, ' ');
  dict += '\n';
  const char prefix[8] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  const uint8_t length[2] = {uint8_t(dict_bytes & 0xFF), uint8_t(dict_bytes >> 8)};
  write_bytes(prefix, 8);
  write_bytes(length, 2);
  write_bytes(dict.data(), dict.size());
}

void TokenShardWriter::append(std::span<const uint32_t> ids) {
  // Ids are written little-endian: the host byte order on every platform we build for (x86-64,
  // aarch64), checked by the static_assert below.
  static_assert(std::endian::native == std::endian::little);
  if (dtype_bytes_ == 4) {
    write_bytes(ids.data(), ids.size() * 4);
  } else {
    narrow_.resize(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      DB_REQUIRE(ids[i] <= 0xFFFF, "token id " + std::to_string(ids[i]) + " does not fit uint16");
      narrow_[i] = static_cast<uint16_t>(ids[i]);
    }
    write_bytes(narrow_.data(), narrow_.size() * 2);
  }
  tokens_ += static_cast<int64_t>(ids.size());
}

void TokenShardWriter::commit() {
  if (format_ == OutputFormat::npy) {
    DB_REQUIRE(std::fseek(file_, 0, SEEK_SET) == 0, "cannot seek in " + tmp_path_);
    write_npy_header();
  }
  bool ok = std::fflush(file_) == 0;
  ok = (std::fclose(file_) == 0) && ok;
  file_ = nullptr;
  DB_REQUIRE(ok, "cannot finish " + tmp_path_ + ": " + std::strerror(errno));
  std::error_code error;
  std::filesystem::rename(tmp_path_, path_, error);
  DB_REQUIRE(!error, "cannot rename " + tmp_path_ + " to " + path_ + ": " + error.message());
  committed_ = true;
}

}  // namespace db::tokenizer
