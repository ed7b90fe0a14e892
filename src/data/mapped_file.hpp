// A read-only memory mapping of a whole file (spec doc/data.md: "Files are memory-mapped,
// never copied whole into memory"). The kernel pages token data in on demand, so a dataset of
// many gigabytes costs address space, not resident memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace db::data {

// Owns one mapping and its file descriptor; both are released by the destructor. Move-only.
// An empty file is opened without a mapping (mmap rejects length 0): bytes() is then empty and
// the caller decides whether that is an error.
class MappedFile {
 public:
  MappedFile() = default;
  // Throws db::Error "token file 'PATH': missing ..." / "cannot open ..." naming the file.
  explicit MappedFile(const std::string& path);
  ~MappedFile();

  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const std::string& path() const { return path_; }
  int64_t size_bytes() const { return static_cast<int64_t>(size_); }
  std::span<const std::byte> bytes() const { return {data_, size_}; }

 private:
  void release() noexcept;

  std::string path_;
  int fd_ = -1;
  const std::byte* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace db::data
