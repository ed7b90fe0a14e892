// The NumPy .npy header (format spec: numpy.lib.format; doc/data.md "NumPy .npy with a
// real header"). Reader and writer share this file so that what we write is what we accept.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace db::data {

// "\x93NUMPY": the six bytes every .npy file starts with.
inline constexpr std::string_view npy_magic{"\x93NUMPY", 6};

bool has_npy_magic(std::span<const std::byte> bytes);

struct NpyHeader {
  int major_version = 1;
  int minor_version = 0;
  std::string descr;  // e.g. "<u2"
  bool fortran_order = false;
  std::vector<int64_t> shape;  // () for a scalar, (n,) for 1-D
  int64_t data_offset = 0;     // bytes from the start of the file to the first element
};

// Parses magic, version (1.x, 2.x, 3.x) and the Python-dict header at the start of `bytes`.
// Checks only the syntax; the caller judges descr and shape. Errors name `path`.
NpyHeader parse_npy_header(std::span<const std::byte> bytes, const std::string& path);

// The complete header (magic through the padding newline) of a version 1.0 file holding a
// 1-D array of `length` elements of `descr`, padded so that the data starts at a multiple of 64
// bytes, as NumPy itself does.
std::string make_npy_header(std::string_view descr, int64_t length);

}  // namespace db::data
