// gzip input through zlib's inflate (RFC 1952). Several gzip members one after the other (what
// `cat a.gz b.gz` and pigz produce) are one stream, as gzip -d reads them.
#include <zlib.h>

#include "core/error.hpp"
#include "tokenizer/byte_stream.hpp"

namespace db::tokenizer {
namespace {

class GzipStream final : public ByteStream {
 public:
  explicit GzipStream(const std::string& path) : input_(path, 1 << 18) {
    DB_REQUIRE(inflateInit2(&z_, 16 + MAX_WBITS) == Z_OK, "zlib: cannot start inflating " + path);
  }
  ~GzipStream() override { inflateEnd(&z_); }

  std::size_t read(char* buffer, std::size_t capacity) override {
    z_.next_out = reinterpret_cast<Bytef*>(buffer);
    z_.avail_out = static_cast<uInt>(capacity);
    while (z_.avail_out == capacity && !finished_) {
      if (z_.avail_in == 0 && !refill()) {
        // A clean end only right after a member's end (or an empty file, refused below).
        DB_REQUIRE(between_members_ && members_ > 0,
                   "truncated gzip input " + input_.path() + " (it ends inside compressed data)");
        finished_ = true;
        break;
      }
      if (between_members_) {  // bytes after a member: the next member begins
        DB_REQUIRE(inflateReset(&z_) == Z_OK, "zlib: cannot restart inflating " + input_.path());
        between_members_ = false;
      }
      const int status = inflate(&z_, Z_NO_FLUSH);
      if (status == Z_STREAM_END) {
        between_members_ = true;
        ++members_;
      } else {
        DB_REQUIRE(status == Z_OK || status == Z_BUF_ERROR,
                   "corrupt gzip input " + input_.path() +
                       " (zlib: " + (z_.msg ? z_.msg : zError(status)) + ")");
      }
    }
    return capacity - z_.avail_out;
  }

 private:
  bool refill() {
    const std::span<const char> bytes = input_.next(file_bytes_read_);
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    z_.avail_in = static_cast<uInt>(bytes.size());
    return !bytes.empty();
  }

  CompressedInput input_;
  z_stream z_{};
  bool between_members_ = false, finished_ = false;
  int members_ = 0;
};

}  // namespace

std::unique_ptr<ByteStream> open_gzip_stream(const std::string& path) {
  return std::make_unique<GzipStream>(path);
}

}  // namespace db::tokenizer
