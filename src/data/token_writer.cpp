#include "data/token_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "data/npy_header.hpp"
#include "data/token_format.hpp"

namespace db::data {
namespace {

void check_dtype(const std::string& path, std::span<const uint32_t> ids, int dtype_bytes) {
  DB_REQUIRE(dtype_bytes == 2 || dtype_bytes == 4,
             "writing token file '" + path +
                 "': dtype must be 2 (uint16) or 4 (uint32) bytes, got " +
                 std::to_string(dtype_bytes));
  if (dtype_bytes == 4) return;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    DB_REQUIRE(ids[i] <= std::numeric_limits<uint16_t>::max(),
               "writing token file '" + path + "': token id " + std::to_string(ids[i]) +
                   " at index " + std::to_string(i) + " does not fit the uint16 dtype");
  }
}

// Owns the descriptor of PATH.tmp; if the write does not complete, the temporary is removed so
// that no partial file is left behind.
class TemporaryFile {
 public:
  explicit TemporaryFile(const std::string& path) : path_(path), temp_path_(path + ".tmp") {
    fd_ = ::open(temp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("cannot create");
  }
  ~TemporaryFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temp_path_.c_str());
  }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;

  void write(const void* data, std::size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      const ssize_t n = ::write(fd_, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("cannot write");
      p += n;
      size -= static_cast<std::size_t>(n);
    }
  }

  // fsync the data, rename over PATH, then fsync the folder so that the rename itself survives
  // a crash.
  void commit() {
    if (::fsync(fd_) != 0) fail("cannot fsync");
    if (::close(fd_) != 0) {
      fd_ = -1;
      fail("cannot close");
    }
    fd_ = -1;
    if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("cannot rename into place");
    committed_ = true;
    const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
    const std::string folder = parent.empty() ? std::string(".") : parent.string();
    const int folder_fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (folder_fd >= 0) {
      ::fsync(folder_fd);  // best effort: some file systems refuse fsync on a folder
      ::close(folder_fd);
    }
  }

 private:
  [[noreturn]] void fail(const char* what) {
    ::db::throw_error(__FILE__, __LINE__,
                      "writing token file '" + path_ + "': " + what + " '" + temp_path_ +
                          "': " + std::strerror(errno));
  }

  std::string path_;
  std::string temp_path_;
  int fd_ = -1;
  bool committed_ = false;
};

// Header bytes, then the ids narrowed to dtype_bytes in bounded chunks (no full copy).
void write_token_file(const std::string& path, const std::string& header,
                      std::span<const uint32_t> ids, int dtype_bytes) {
  TemporaryFile file(path);
  file.write(header.data(), header.size());
  if (dtype_bytes == 4) {
    file.write(ids.data(), ids.size_bytes());
  } else {
    constexpr std::size_t chunk = 1 << 16;
    std::vector<uint16_t> narrow(std::min(chunk, ids.size()));
    for (std::size_t start = 0; start < ids.size(); start += chunk) {
      const std::size_t count = std::min(chunk, ids.size() - start);
      for (std::size_t i = 0; i < count; ++i) narrow[i] = static_cast<uint16_t>(ids[start + i]);
      file.write(narrow.data(), count * sizeof(uint16_t));
    }
  }
  file.commit();
}

}  // namespace

void write_olmo_raw(const std::string& path, std::span<const uint32_t> ids, int dtype_bytes) {
  check_dtype(path, ids, dtype_bytes);
  write_token_file(path, std::string(), ids, dtype_bytes);
}

void write_npy(const std::string& path, std::span<const uint32_t> ids, int dtype_bytes) {
  check_dtype(path, ids, dtype_bytes);
  const std::string header =
      make_npy_header(dtype_bytes == 2 ? "<u2" : "<u4", static_cast<int64_t>(ids.size()));
  write_token_file(path, header, ids, dtype_bytes);
}

void write_llmc_bin(const std::string& path, std::span<const uint32_t> ids, int dtype_bytes) {
  check_dtype(path, ids, dtype_bytes);
  DB_REQUIRE(ids.size() <= static_cast<std::size_t>(std::numeric_limits<int32_t>::max()),
             "writing token file '" + path + "': " + std::to_string(ids.size()) +
                 " tokens exceed the int32 count of an llm.c header");
  std::array<int32_t, llmc_header_words> words{};
  words[0] = dtype_bytes == 2 ? llmc_magic_uint16 : llmc_magic_uint32;
  words[1] = dtype_bytes == 2 ? 1 : 7;
  words[2] = static_cast<int32_t>(ids.size());
  const std::string header(reinterpret_cast<const char*>(words.data()), sizeof(words));
  write_token_file(path, header, ids, dtype_bytes);
}

}  // namespace db::data
