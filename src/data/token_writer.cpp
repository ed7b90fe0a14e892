#include "data/token_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "core/error.hpp"
#include "data/npy_header.hpp"

namespace db::data {
namespace {

// The bytes before the ids: none for OLMo raw, the .npy header, or llm.c's 256 int32 words.
std::string header_for(const std::string& path, TokenFormat format, int dtype_bytes,
                       std::optional<int64_t> tokens) {
  if (format == TokenFormat::olmo_raw) return {};
  DB_REQUIRE(tokens.has_value(), "writing token file '" + path + "': " + to_string(format) +
                                     " needs the token count before the ids");
  if (format == TokenFormat::npy) return make_npy_header(dtype_bytes == 2 ? "<u2" : "<u4", *tokens);
  DB_REQUIRE(format == TokenFormat::llmc_bin,
             "writing token file '" + path + "': no layout chosen (auto)");
  DB_REQUIRE(*tokens <= std::numeric_limits<int32_t>::max(),
             "writing token file '" + path + "': " + std::to_string(*tokens) +
                 " tokens exceed the int32 count of an llm.c header");
  std::array<int32_t, llmc_header_words> words{};
  words[0] = dtype_bytes == 2 ? llmc_magic_uint16 : llmc_magic_uint32;
  words[1] = dtype_bytes == 2 ? 1 : 7;
  words[2] = static_cast<int32_t>(*tokens);
  return std::string(reinterpret_cast<const char*>(words.data()), sizeof(words));
}

void write_whole(const std::string& path, TokenFormat format, std::span<const uint32_t> ids,
                 int dtype_bytes) {
  TokenFileWriter file(path, format, dtype_bytes, static_cast<int64_t>(ids.size()));
  file.append(ids);
  file.commit();
}

}  // namespace

TokenFileWriter::TokenFileWriter(std::string path, TokenFormat format, int dtype_bytes,
                                 std::optional<int64_t> tokens)
    : path_(std::move(path)),
      temp_path_(path_ + ".tmp"),
      dtype_bytes_(dtype_bytes),
      expected_tokens_(tokens) {
  DB_REQUIRE(dtype_bytes == 2 || dtype_bytes == 4,
             "writing token file '" + path_ +
                 "': dtype must be 2 (uint16) or 4 (uint32) bytes, got " +
                 std::to_string(dtype_bytes));
  const std::string header = header_for(path_, format, dtype_bytes, tokens);
  fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("cannot create");
  write(header.data(), header.size());
}

TokenFileWriter::~TokenFileWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_path_.c_str());
}

void TokenFileWriter::fail(const char* what) {
  ::db::throw_error(__FILE__, __LINE__,
                    "writing token file '" + path_ + "': " + what + " '" + temp_path_ +
                        "': " + std::strerror(errno));
}

void TokenFileWriter::write(const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("cannot write");
    p += n;
    size -= static_cast<std::size_t>(n);
  }
}

void TokenFileWriter::append_bytes(const void* data, std::size_t size) {
  write(data, size);
  written_bytes_ += static_cast<int64_t>(size);
}

void TokenFileWriter::append(std::span<const uint32_t> ids) {
  // Ids are written little-endian: the host byte order on every platform we build for.
  static_assert(std::endian::native == std::endian::little);
  if (dtype_bytes_ == 4) {
    append_bytes(ids.data(), ids.size_bytes());
    return;
  }
  constexpr std::size_t chunk = 1 << 16;  // bounded scratch, never a full copy
  for (std::size_t start = 0; start < ids.size(); start += chunk) {
    const std::size_t count = std::min(chunk, ids.size() - start);
    narrow_.resize(count);
    for (std::size_t i = 0; i < count; ++i) {
      const uint32_t id = ids[start + i];
      DB_REQUIRE(id <= std::numeric_limits<uint16_t>::max(),
                 "writing token file '" + path_ + "': token id " + std::to_string(id) +
                     " at index " + std::to_string(tokens_written() + int64_t(i)) +
                     " does not fit the uint16 dtype");
      narrow_[i] = static_cast<uint16_t>(id);
    }
    append_bytes(narrow_.data(), count * sizeof(uint16_t));
  }
}

// fsync the data, rename over PATH, then fsync the folder so that the rename itself survives
// a crash.
void TokenFileWriter::commit(bool durable) {
  DB_REQUIRE(!expected_tokens_ || *expected_tokens_ == tokens_written(),
             "writing token file '" + path_ + "': " + std::to_string(tokens_written()) +
                 " tokens written, the header says " + std::to_string(*expected_tokens_));
  if (durable && ::fsync(fd_) != 0) fail("cannot fsync");
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("cannot close");
  if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("cannot rename into place");
  committed_ = true;
  if (!durable) return;
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  const std::string folder = parent.empty() ? std::string(".") : parent.string();
  const int folder_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (folder_fd >= 0) {
    ::fsync(folder_fd);  // best effort: some file systems refuse fsync on a folder
    ::close(folder_fd);
  }
}

void write_olmo_raw(const std::string& path, std::span<const uint32_t> ids, int dtype_bytes) {
  write_whole(path, TokenFormat::olmo_raw, ids, dtype_bytes);
}

void write_npy(const std::string& path, std::span<const uint32_t> ids, int dtype_bytes) {
  write_whole(path, TokenFormat::npy, ids, dtype_bytes);
}

void write_llmc_bin(const std::string& path, std::span<const uint32_t> ids, int dtype_bytes) {
  write_whole(path, TokenFormat::llmc_bin, ids, dtype_bytes);
}

}  // namespace db::data
