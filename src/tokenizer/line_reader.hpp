// Lines of a ByteStream, each with the offset of its first byte in the stream's content, read
// through a buffer that grows only as far as the longest line.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "tokenizer/byte_stream.hpp"

namespace db::tokenizer {

class LineReader {
 public:
  // `first_offset`: the content offset of the stream's first byte.
  LineReader(ByteStream& stream, int64_t first_offset);
  // The next line with its '\n' (the last line may lack one) and where it starts; false at the
  // end. The view stays valid until the next call.
  bool next(std::string_view& line, int64_t& offset);

 private:
  bool fill();  // reads more content after what is buffered; false at the end

  ByteStream& stream_;
  std::string buffer_;
  std::size_t begin_ = 0, end_ = 0;  // unread bytes are buffer_[begin_, end_)
  int64_t offset_;                   // content offset of buffer_[begin_]
  bool at_end_ = false;
};

}  // namespace db::tokenizer
