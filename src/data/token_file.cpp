#include "data/token_file.hpp"

#include <algorithm>
#include <bit>
#include <cstring>

#include "core/error.hpp"
#include "data/npy_header.hpp"

namespace db::data {

// All three formats are little-endian; we read them in place without byte swapping.
static_assert(std::endian::native == std::endian::little,
              "DepthBench assumes a little-endian host");

namespace {

std::string dtype_name(int dtype_bytes) {
  return dtype_bytes == 2 ? "uint16" : dtype_bytes == 4 ? "uint32" : "unset";
}

// Loads element i of a little-endian array whose start need not be aligned (an npy header of an
// old NumPy is padded to 16 bytes only); memcpy compiles to one plain load.
template <typename T>
inline T load(const std::byte* base, int64_t i) {
  T value;
  std::memcpy(&value, base + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return value;
}

// Index of the first id >= vocab_size, or -1. The common case (every id valid) is one branch-free
// max reduction per block that the compiler vectorises; only a failing block is searched again.
template <typename T>
int64_t first_id_out_of_vocabulary(const std::byte* base, int64_t count, uint64_t vocab_size) {
  constexpr int64_t block = 1 << 16;
  for (int64_t start = 0; start < count; start += block) {
    const int64_t end = std::min(count, start + block);
    T block_max = 0;
    for (int64_t i = start; i < end; ++i) block_max = std::max(block_max, load<T>(base, i));
    if (block_max < vocab_size) continue;
    for (int64_t i = start; i < end; ++i)
      if (load<T>(base, i) >= vocab_size) return i;
  }
  return -1;
}

}  // namespace

TokenFile::TokenFile(const std::string& path, const TokenFileOptions& options) : mapped_(path) {
  const std::span<const std::byte> bytes = mapped_.bytes();
  DB_REQUIRE(!bytes.empty(), "token file '" + path + "': empty (0 bytes)");
  DB_REQUIRE(
      options.raw_dtype_bytes == 0 || options.raw_dtype_bytes == 2 || options.raw_dtype_bytes == 4,
      "token file '" + path + "': raw dtype must be 2 (uint16) or 4 (uint32) bytes, got " +
          std::to_string(options.raw_dtype_bytes));
  format_ =
      options.format == TokenFormat::auto_detect ? detect_token_format(bytes) : options.format;
  switch (format_) {
    case TokenFormat::npy:
      open_npy(bytes);
      break;
    case TokenFormat::llmc_bin:
      open_llmc(bytes);
      break;
    default:
      open_raw(bytes, options.raw_dtype_bytes);
      break;
  }
  DB_REQUIRE(num_tokens_ > 0, "token file '" + path + "': empty (header declares 0 tokens)");
  if (options.vocab_size > 0) check_vocabulary(options.vocab_size);
}

void TokenFile::open_raw(std::span<const std::byte> bytes, int requested_dtype_bytes) {
  // The name (NAME.u16 / NAME.u32, as tokenize writes them) declares the dtype; a setting that
  // says otherwise is a contradiction, not a choice.
  const int named = raw_dtype_from_name(path());
  DB_REQUIRE(requested_dtype_bytes == 0 || named == 0 || requested_dtype_bytes == named,
             "token file '" + path() + "': its name says " + dtype_name(named) +
                 ", but it is to be read as " + dtype_name(requested_dtype_bytes) +
                 " (data.dtype_bytes = " + std::to_string(requested_dtype_bytes) + ")");
  const int dtype_bytes = requested_dtype_bytes ? requested_dtype_bytes : named ? named : 2;
  // OLMo arrays have no header: the size is all we can check (doc/data.md).
  DB_REQUIRE(bytes.size() % dtype_bytes == 0,
             "token file '" + path() + "': size " + std::to_string(bytes.size()) +
                 " bytes is not a multiple of the " + std::to_string(dtype_bytes) + "-byte " +
                 dtype_name(dtype_bytes) + " dtype");
  dtype_bytes_ = dtype_bytes;
  num_tokens_ = static_cast<int64_t>(bytes.size()) / dtype_bytes;
  tokens_ = bytes.data();
  if (dtype_bytes == 2) refuse_uint32_read_as_uint16();
}

void TokenFile::refuse_uint32_read_as_uint16() const {
  // uint32 ids read as uint16 come out as (low half, high half) pairs, and the high halves are
  // 0 or 1 for any vocabulary below 131 072 ids: every id stays below vocab_size, so only this
  // pattern gives the misreading away. Text never puts only such ids at every odd position.
  const int64_t sample = std::min<int64_t>(num_tokens_, 4096) & ~int64_t(1);
  if (sample < 32) return;
  uint16_t max_even = 0, max_odd = 0;
  for (int64_t i = 0; i < sample; i += 2) {
    max_even = std::max(max_even, load<uint16_t>(tokens_, i));
    max_odd = std::max(max_odd, load<uint16_t>(tokens_, i + 1));
  }
  constexpr uint16_t kLargestHighHalf = 3;  // vocabularies up to 262 144 ids
  DB_REQUIRE(!(max_odd <= kLargestHighHalf && max_even > kLargestHighHalf),
             "token file '" + path() + "': read as uint16, every second id of the first " +
                 std::to_string(sample) + " is at most " + std::to_string(max_odd) +
                 ", the high halves of uint32 ids: this is a uint32 file (set data.dtype_bytes "
                 "= 4 or name it .u32)");
}

void TokenFile::open_npy(std::span<const std::byte> bytes) {
  const NpyHeader header = parse_npy_header(bytes, path());
  // Token ids are unsigned 16- or 32-bit little-endian; anything else ('<i8', '<f4', '>u2')
  // would be silently misread, so it is refused.
  if (header.descr == "<u2") {
    dtype_bytes_ = 2;
  } else if (header.descr == "<u4") {
    dtype_bytes_ = 4;
  } else {
    DB_REQUIRE(false, "token file '" + path() + "': wrong dtype '" + header.descr +
                          "' in .npy header (expected '<u2' or '<u4')");
  }
  DB_REQUIRE(header.shape.size() == 1, "token file '" + path() + "': .npy array is not 1-D (" +
                                           std::to_string(header.shape.size()) + " dimensions)");
  DB_REQUIRE(!header.fortran_order,
             "token file '" + path() + "': .npy fortran_order True is not supported");
  num_tokens_ = header.shape[0];
  const int64_t data_bytes = static_cast<int64_t>(bytes.size()) - header.data_offset;
  DB_REQUIRE(num_tokens_ <= data_bytes / dtype_bytes_,
             "token file '" + path() + "': truncated: .npy shape (" + std::to_string(num_tokens_) +
                 ",) needs " + std::to_string(num_tokens_ * dtype_bytes_) + " bytes, only " +
                 std::to_string(data_bytes) + " follow the header");
  DB_REQUIRE(num_tokens_ * dtype_bytes_ == data_bytes,
             "token file '" + path() +
                 "': trailing bytes: " + std::to_string(data_bytes - num_tokens_ * dtype_bytes_) +
                 " bytes after the " + std::to_string(num_tokens_) + " tokens of the .npy shape");
  tokens_ = bytes.data() + header.data_offset;
}

void TokenFile::open_llmc(std::span<const std::byte> bytes) {
  DB_REQUIRE(static_cast<int64_t>(bytes.size()) >= llmc_header_bytes,
             "token file '" + path() + "': truncated llm.c header (" +
                 std::to_string(bytes.size()) + " bytes, need " +
                 std::to_string(llmc_header_bytes) + ")");
  const int32_t magic = load<int32_t>(bytes.data(), 0);
  // The magic is the dtype: a forced llmc format on another file fails here.
  DB_REQUIRE(magic == llmc_magic_uint16 || magic == llmc_magic_uint32,
             "token file '" + path() + "': bad llm.c magic " + std::to_string(magic) +
                 " (wrong dtype: expected " + std::to_string(llmc_magic_uint16) +
                 " for uint16 or " + std::to_string(llmc_magic_uint32) + " for uint32)");
  dtype_bytes_ = magic == llmc_magic_uint16 ? 2 : 4;
  llmc_version_ = load<int32_t>(bytes.data(), 1);
  const int32_t count = load<int32_t>(bytes.data(), 2);
  DB_REQUIRE(count >= 0, "token file '" + path() + "': llm.c token count " + std::to_string(count) +
                             " is negative");
  num_tokens_ = count;
  const int64_t data_bytes = static_cast<int64_t>(bytes.size()) - llmc_header_bytes;
  DB_REQUIRE(num_tokens_ * dtype_bytes_ <= data_bytes,
             "token file '" + path() + "': truncated: llm.c header declares " +
                 std::to_string(num_tokens_) + " tokens (" +
                 std::to_string(num_tokens_ * dtype_bytes_) + " bytes), only " +
                 std::to_string(data_bytes) + " bytes follow the header");
  DB_REQUIRE(num_tokens_ * dtype_bytes_ == data_bytes,
             "token file '" + path() + "': trailing bytes: " +
                 std::to_string(data_bytes - num_tokens_ * dtype_bytes_) + " bytes after the " +
                 std::to_string(num_tokens_) + " tokens the llm.c header declares");
  tokens_ = bytes.data() + llmc_header_bytes;
}

void TokenFile::check_vocabulary(int64_t vocab_size) const {
  const uint64_t limit = static_cast<uint64_t>(vocab_size);
  const int64_t bad = dtype_bytes_ == 2
                          ? first_id_out_of_vocabulary<uint16_t>(tokens_, num_tokens_, limit)
                          : first_id_out_of_vocabulary<uint32_t>(tokens_, num_tokens_, limit);
  if (bad < 0) return;
  const uint32_t id = token(bad);
  // A uint16 file read as uint32 pairs two ids into one far above any vocabulary.
  const bool looks_uint16 = format_ == TokenFormat::olmo_raw && dtype_bytes_ == 4 && id > 0xFFFF;
  DB_REQUIRE(false, "token file '" + path() + "': token id " + std::to_string(id) + " at index " +
                        std::to_string(bad) + " >= vocab_size " + std::to_string(vocab_size) +
                        (looks_uint16 ? " (a uint16 file read as uint32? set data.dtype_bytes "
                                        "= 2 or name it .u16)"
                                      : ""));
}

uint32_t TokenFile::token(int64_t index) const {
  DB_REQUIRE(index >= 0 && index < num_tokens_, "token file '" + path() + "': token index " +
                                                    std::to_string(index) + " out of range (" +
                                                    std::to_string(num_tokens_) + " tokens)");
  return dtype_bytes_ == 2 ? load<uint16_t>(tokens_, index) : load<uint32_t>(tokens_, index);
}

void TokenFile::read_tokens(int64_t first, std::span<int32_t> out) const {
  const int64_t count = static_cast<int64_t>(out.size());
  DB_REQUIRE(first >= 0 && count <= num_tokens_ - first,
             "token file '" + path() + "': token range [" + std::to_string(first) + ", " +
                 std::to_string(first + count) + ") out of range (" + std::to_string(num_tokens_) +
                 " tokens)");
  // Ids are < vocab_size (checked at open when given), far below 2^31, so int32 holds them.
  if (dtype_bytes_ == 2) {
    for (int64_t i = 0; i < count; ++i) out[i] = load<uint16_t>(tokens_, first + i);
  } else {
    for (int64_t i = 0; i < count; ++i)
      out[i] = static_cast<int32_t>(load<uint32_t>(tokens_, first + i));
  }
}

}  // namespace db::data
