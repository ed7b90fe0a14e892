#include "tokenizer/byte_stream.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

namespace db::tokenizer {
namespace {

class PlainStream final : public ByteStream {
 public:
  PlainStream(const std::string& path, int64_t offset) : file_(path, offset) {}
  std::size_t read(char* buffer, std::size_t capacity) override {
    const std::size_t n = file_.read(buffer, capacity);
    file_bytes_read_ += static_cast<int64_t>(n);
    return n;
  }

 private:
  FileReader file_;
};

}  // namespace

Compression compression_of(const std::string& path) {
  if (path.ends_with(".gz")) return Compression::gzip;
  if (path.ends_with(".zst") || path.ends_with(".zstd")) return Compression::zstd;
  return Compression::none;
}

std::string without_compression_suffix(const std::string& path) {
  switch (compression_of(path)) {
    case Compression::gzip:
      return path.substr(0, path.size() - 3);
    case Compression::zstd:
      return path.substr(0, path.rfind('.'));
    case Compression::none:
      break;
  }
  return path;
}

std::unique_ptr<ByteStream> open_byte_stream(const std::string& path, int64_t offset) {
  const Compression compression = compression_of(path);
  DB_REQUIRE(offset == 0 || compression == Compression::none,
             "compressed input " + path + " is read from its start only");
  if (compression == Compression::gzip) return open_gzip_stream(path);
  if (compression == Compression::zstd) return open_zstd_stream(path);
  return std::make_unique<PlainStream>(path, offset);
}

FileReader::FileReader(const std::string& path, int64_t offset) : path_(path) {
  if (path == "-") {  // standard input: a stream, read from where it is
    DB_REQUIRE(offset == 0, "standard input is read from its start only");
    fd_ = ::dup(STDIN_FILENO);
    DB_REQUIRE(fd_ >= 0, std::string("cannot read standard input: ") + std::strerror(errno));
    path_ = "standard input";
    return;
  }
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  DB_REQUIRE(fd_ >= 0, "cannot open " + path + ": " + std::strerror(errno));
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  if (offset > 0 && ::lseek(fd_, offset, SEEK_SET) != offset) {
    const int error = errno;
    ::close(fd_);
    DB_REQUIRE(false, "cannot seek in " + path + ": " + std::strerror(error));
  }
}

FileReader::~FileReader() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t FileReader::read(char* buffer, std::size_t capacity) {
  for (;;) {
    const ssize_t n = ::read(fd_, buffer, capacity);
    if (n >= 0) return static_cast<std::size_t>(n);
    DB_REQUIRE(errno == EINTR, "cannot read " + path_ + ": " + std::strerror(errno));
  }
}

}  // namespace db::tokenizer
