#include "tokenizer/line_reader.hpp"

#include <cstring>

namespace db::tokenizer {
namespace {
constexpr std::size_t kReadBytes = 1 << 20;
}

LineReader::LineReader(ByteStream& stream, int64_t first_offset)
    : stream_(stream), buffer_(kReadBytes, '\0'), offset_(first_offset) {}

bool LineReader::fill() {
  if (at_end_) return false;
  if (begin_ > 0) {  // move the unread tail to the front
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (buffer_.size() - end_ < kReadBytes / 2) buffer_.resize(buffer_.size() * 2);
  const std::size_t n = stream_.read(buffer_.data() + end_, buffer_.size() - end_);
  end_ += n;
  at_end_ = n == 0;
  return n > 0;
}

bool LineReader::next(std::string_view& line, int64_t& offset) {
  std::size_t searched = begin_;
  for (;;) {
    const void* newline = std::memchr(buffer_.data() + searched, '\n', end_ - searched);
    if (newline) {
      const std::size_t stop = static_cast<const char*>(newline) - buffer_.data() + 1;
      line = std::string_view(buffer_.data() + begin_, stop - begin_);
      break;
    }
    searched = end_ - begin_;  // relative: fill() moves the unread bytes to the front
    if (!fill()) {
      if (begin_ == end_) return false;
      line = std::string_view(buffer_.data() + begin_, end_ - begin_);
      break;
    }
    searched += begin_;
  }
  offset = offset_;
  offset_ += static_cast<int64_t>(line.size());
  begin_ += line.size();
  return true;
}

}  // namespace db::tokenizer
