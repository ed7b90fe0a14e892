// The content of one input file as a stream of bytes, decompressed on the fly for `.gz` (zlib)
// and `.zst` (libzstd), so that no file is ever held whole in memory (doc/tokenize.md, "Inputs").
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace db::tokenizer {

enum class Compression { none, gzip, zstd };

// From the name: `.gz` is gzip, `.zst`/`.zstd` is Zstandard, anything else is plain.
Compression compression_of(const std::string& path);
// The name without its compression suffix (`a.jsonl.gz` -> `a.jsonl`): it decides the format.
std::string without_compression_suffix(const std::string& path);

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Up to `capacity` bytes of content; 0 only at its end. Throws db::Error naming the file on a
  // read error and on corrupt or truncated compressed data.
  virtual std::size_t read(char* buffer, std::size_t capacity) = 0;
  // Bytes of the file on disk consumed so far (progress is measured on them).
  int64_t file_bytes_read() const { return file_bytes_read_; }

 protected:
  int64_t file_bytes_read_ = 0;
};

// Opens `path` as its compression_of() says; "-" is standard input (plain). `offset` skips that
// many bytes of a plain file (a rank's share of a large uncompressed file); compressed files always
// start at 0.
std::unique_ptr<ByteStream> open_byte_stream(const std::string& path, int64_t offset = 0);

// The compressed readers behind open_byte_stream, each over the raw bytes of `path`.
std::unique_ptr<ByteStream> open_gzip_stream(const std::string& path);
std::unique_ptr<ByteStream> open_zstd_stream(const std::string& path);

// Raw bytes of a file from `offset`; owns the descriptor.
class FileReader {
 public:
  FileReader(const std::string& path, int64_t offset);
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;
  std::size_t read(char* buffer, std::size_t capacity);  // 0 at the end of the file
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// The raw bytes of a compressed file, one buffer at a time, for a decompressing stream.
class CompressedInput {
 public:
  CompressedInput(const std::string& path, std::size_t buffer_bytes)
      : file_(path, 0), buffer_(buffer_bytes) {}
  // The next bytes of the file, empty at its end; `bytes_read` grows by their count.
  std::span<const char> next(int64_t& bytes_read) {
    const std::size_t n = file_.read(buffer_.data(), buffer_.size());
    bytes_read += static_cast<int64_t>(n);
    return {buffer_.data(), n};
  }
  const std::string& path() const { return file_.path(); }

 private:
  FileReader file_;
  std::vector<char> buffer_;
};

}  // namespace db::tokenizer
