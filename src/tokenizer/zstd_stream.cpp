// Zstandard input through libzstd's streaming decoder; several frames one after the other are
// one stream, as `zstd -d` reads them.
#include <zstd.h>

#include "core/error.hpp"
#include "tokenizer/byte_stream.hpp"

namespace db::tokenizer {
namespace {

class ZstdStream final : public ByteStream {
 public:
  explicit ZstdStream(const std::string& path)
      : input_(path, ZSTD_DStreamInSize()), context_(ZSTD_createDCtx()) {
    DB_REQUIRE(context_, "zstd: cannot create a decoder for " + path);
  }
  ~ZstdStream() override { ZSTD_freeDCtx(context_); }

  std::size_t read(char* buffer, std::size_t capacity) override {
    ZSTD_outBuffer out{buffer, capacity, 0};
    while (out.pos == 0 && !finished_) {
      if (in_.pos == in_.size && !refill()) {
        DB_REQUIRE(frame_complete_ && frames_ > 0,
                   "truncated zstd input " + input_.path() + " (it ends inside a frame)");
        finished_ = true;
        break;
      }
      const std::size_t status = ZSTD_decompressStream(context_, &out, &in_);
      DB_REQUIRE(!ZSTD_isError(status), "corrupt zstd input " + input_.path() +
                                            " (zstd: " + ZSTD_getErrorName(status) + ")");
      frame_complete_ = status == 0;  // 0: a frame ended and was flushed completely
      if (frame_complete_) ++frames_;
    }
    return out.pos;
  }

 private:
  bool refill() {
    const std::span<const char> bytes = input_.next(file_bytes_read_);
    in_ = {bytes.data(), bytes.size(), 0};
    return !bytes.empty();
  }

  CompressedInput input_;
  ZSTD_DCtx* context_;
  ZSTD_inBuffer in_{nullptr, 0, 0};
  bool frame_complete_ = false, finished_ = false;
  int frames_ = 0;
};

}  // namespace

std::unique_ptr<ByteStream> open_zstd_stream(const std::string& path) {
  return std::make_unique<ZstdStream>(path);
}

}  // namespace db::tokenizer
