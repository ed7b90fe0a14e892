#include "data/npy_header.hpp"

#include <cctype>
#include <cstring>

#include "core/error.hpp"

namespace db::data {
namespace {

// A cursor over the header text, which is a Python dict literal such as
// {'descr': '<u2', 'fortran_order': False, 'shape': (1000,), }
// Only the literal forms NumPy writes are understood: strings, True/False, tuples of integers.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  NpyHeader parse(NpyHeader header) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = parse_string();
      expect(':');
      if (key == "descr") {
        header.descr = parse_string();
        have_descr = true;
      } else if (key == "fortran_order") {
        header.fortran_order = parse_bool();
        have_order = true;
      } else if (key == "shape") {
        header.shape = parse_int_tuple();
        have_shape = true;
      } else {
        fail("unknown key '" + key + "'");
      }
      skip_space();
      if (peek() == ',') ++pos_;
    }
    if (!have_descr || !have_order || !have_shape)
      fail("needs the keys 'descr', 'fortran_order' and 'shape'");
    return header;
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    ::db::throw_error(__FILE__, __LINE__,
                      "token file '" + path_ + "': malformed .npy header (" + what + ")");
  }
  char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }
  std::string parse_string() {
    skip_space();
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail("expected a quoted string");
    const std::size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return value;
  }
  bool parse_bool() {
    skip_space();
    if (text_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    fail("fortran_order is neither True nor False");
  }
  std::vector<int64_t> parse_int_tuple() {
    std::vector<int64_t> values;
    expect('(');
    for (;;) {
      skip_space();
      if (peek() == ')') break;
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        fail("shape is not a tuple of integers");
      int64_t value = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (value > (INT64_MAX - 9) / 10) fail("shape too large");
        value = value * 10 + (text_[pos_++] - '0');
      }
      if (peek() == 'L') ++pos_;  // Python 2 long suffix in files from old NumPy
      values.push_back(value);
      skip_space();
      if (peek() == ',') ++pos_;
    }
    ++pos_;
    return values;
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

uint32_t read_little_endian(const std::byte* p, int bytes) {
  uint32_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(p[i]);
  return value;
}

}  // namespace

bool has_npy_magic(std::span<const std::byte> bytes) {
  return bytes.size() >= npy_magic.size() &&
         std::memcmp(bytes.data(), npy_magic.data(), npy_magic.size()) == 0;
}

NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& path) {
  DB_REQUIRE(has_npy_magic(bytes),
             "token file '" + path + "': not a .npy file (no \\x93NUMPY magic)");
  DB_REQUIRE(bytes.size() >= 10, "token file '" + path + "': truncated .npy header");
  NpyHeader header;
  header.major_version = static_cast<uint8_t>(bytes[6]);
  header.minor_version = static_cast<uint8_t>(bytes[7]);
  // Version 1.x stores the header length in 2 bytes, 2.x and 3.x (UTF-8 header) in 4 bytes.
  const int length_bytes = header.major_version == 1 ? 2 : 4;
  DB_REQUIRE(header.major_version >= 1 && header.major_version <= 3,
             "token file '" + path + "': unsupported .npy version " +
                 std::to_string(header.major_version) + "." + std::to_string(header.minor_version));
  const int64_t prefix = 8 + length_bytes;
  DB_REQUIRE(static_cast<int64_t>(bytes.size()) >= prefix,
             "token file '" + path + "': truncated .npy header");
  const int64_t header_length = read_little_endian(bytes.data() + 8, length_bytes);
  header.data_offset = prefix + header_length;
  DB_REQUIRE(static_cast<int64_t>(bytes.size()) >= header.data_offset,
             "token file '" + path + "': truncated .npy header (declares " +
                 std::to_string(header_length) + " header bytes, file has " +
                 std::to_string(bytes.size()) + " bytes)");
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + prefix,
                              static_cast<std::size_t>(header_length));
  return HeaderParser(text, path).parse(std::move(header));
}

std::string make_npy_header(std::string_view descr, int64_t length) {
  std::string dict = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (" +
                     std::to_string(length) + ",), }";
  // magic (6) + version (2) + length (2) + dict + spaces + '\n' is a multiple of 64.
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict.push_back('\n');
  std::string header(npy_magic);
  header.push_back('\x01');
  header.push_back('\x00');
  header.push_back(static_cast<char>(dict.size() & 0xff));
  header.push_back(static_cast<char>((dict.size() >> 8) & 0xff));
  return header + dict;
}

}  // namespace db::data
