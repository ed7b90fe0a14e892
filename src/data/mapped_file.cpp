#include "data/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.hpp"

namespace db::data {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    const int code = errno;
    DB_REQUIRE(code != ENOENT, "token file '" + path + "': missing (no such file)");
    DB_REQUIRE(false, "token file '" + path + "': cannot open: " + std::strerror(code));
  }
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const int code = errno;
    release();
    DB_REQUIRE(false, "token file '" + path + "': cannot stat: " + std::strerror(code));
  }
  if (!S_ISREG(info.st_mode)) {
    release();
    DB_REQUIRE(false, "token file '" + path + "': " +
                          (S_ISDIR(info.st_mode) ? "is a directory, not a token file (give the "
                                                   "files in it, e.g. '" +
                                                       path + "/*.npy')"
                                                 : "not a regular file"));
  }
  size_ = static_cast<std::size_t>(info.st_size);
  if (size_ == 0) return;  // nothing to map; TokenFile reports "empty"
  void* address = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd_, 0);
  if (address == MAP_FAILED) {
    const int code = errno;
    release();
    DB_REQUIRE(false, "token file '" + path + "': cannot mmap: " + std::strerror(code));
  }
  data_ = static_cast<const std::byte*>(address);
}

MappedFile::~MappedFile() {
  release();
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() noexcept {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  fd_ = -1;
  size_ = 0;
}

}  // namespace db::data
