#include "io/safetensors.hpp"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/format.hpp"
#include "util/json.hpp"

namespace db {
namespace {

// The format is little-endian; so are the machines we build for, and raw bytes are copied.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes little-endian");

constexpr int64_t kMaxHeaderBytes = int64_t(1) << 30;

int dtype_bytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" || dtype == "F8_E5M2")
    return 1;
  return 0;
}

float from_bits(uint32_t bits) {
  return std::bit_cast<float>(bits);
}

float bf16_to_float(uint16_t h) {
  return from_bits(uint32_t(h) << 16);
}

// IEEE half → float, exactly (every half is a float), subnormals, infinities and NaN included.
float f16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  int exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) return from_bits(sign | 0x7f800000 | (mantissa << 13));
  if (exponent != 0) return from_bits(sign | (uint32_t(exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return from_bits(sign);
  exponent = 113;  // subnormal m·2⁻²⁴: shift m up to 1.m' and lower the exponent to match
  while (!(mantissa & 0x400)) {
    mantissa <<= 1;
    --exponent;
  }
  return from_bits(sign | (uint32_t(exponent) << 23) | ((mantissa & 0x3ff) << 13));
}

template <class Bits, class Convert>
std::vector<float> convert(const std::vector<char>& bytes, Convert to_float) {
  std::vector<float> out(bytes.size() / sizeof(Bits));
  for (size_t i = 0; i < out.size(); ++i) {
    Bits bits;
    std::memcpy(&bits, bytes.data() + i * sizeof(Bits), sizeof(Bits));
    out[i] = to_float(bits);
  }
  return out;
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::string header = "{\"__metadata__\":{";
  bool first = true;
  for (const auto& [key, value] : metadata) {
    if (!first) header += ',';
    header.append(json_quote(key)).append(":").append(json_quote(value));
    first = false;
  }
  header += '}';
  int64_t offset = 0;
  for (const TensorView& t : tensors) {
    const int64_t bytes = element_count(t.shape) * int64_t(sizeof(float));
    header.append(",").append(json_quote(t.name)).append(":{\"dtype\":\"F32\",\"shape\":[");
    for (size_t i = 0; i < t.shape.size(); ++i)
      header.append(i ? "," : "").append(std::to_string(t.shape[i]));
    header.append("],\"data_offsets\":[").append(std::to_string(offset)).append(",");
    header.append(std::to_string(offset + bytes)).append("]}");
    offset += bytes;
  }
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');  // the arrays start 8-byte aligned

  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    DB_REQUIRE(out, "cannot create " + tmp);
    const uint64_t length = header.size();
    out.write(reinterpret_cast<const char*>(&length), sizeof length);
    out.write(header.data(), std::streamsize(header.size()));
    for (const TensorView& t : tensors)
      out.write(reinterpret_cast<const char*>(t.data),
                std::streamsize(element_count(t.shape) * int64_t(sizeof(float))));
    out.flush();
    if (!out) {
      throw_if_environment_errno(errno, tmp);
      throw Error("cannot write " + tmp);
    }
  }
  DB_REQUIRE(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot rename " + tmp + " to " + path);
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path) {
  std::ifstream in(path, std::ios::binary);
  DB_REQUIRE(in, "safetensors file " + path + " not found or unreadable");
  std::error_code ec;
  const int64_t file_bytes = int64_t(std::filesystem::file_size(path, ec));
  uint64_t length = 0;
  in.read(reinterpret_cast<char*>(&length), sizeof length);
  DB_REQUIRE(in && !ec && int64_t(length) <= file_bytes - 8 && int64_t(length) < kMaxHeaderBytes,
             path + " is not a safetensors file (bad header length)");
  std::string header(length, '\0');
  in.read(header.data(), std::streamsize(length));
  DB_REQUIRE(in, path + ": header truncated");
  data_start_ = 8 + int64_t(length);
  JsonValue root;
  try {
    root = parse_json(header);
  } catch (const Error& e) {
    throw Error(path + ": safetensors header is not JSON (" + e.what() + ")");
  }
  DB_REQUIRE(root.is_object(), path + ": safetensors header is not a JSON object");
  for (const auto& [name, value] : root.as_object()) {
    if (name == "__metadata__") {
      DB_REQUIRE(value.is_object(), path + ": __metadata__ is not an object");
      for (const auto& [key, text] : value.as_object())
        metadata_[key] = text.as_string(("__metadata__ " + key).c_str());
      continue;
    }
    const std::string what = path + ": tensor " + name;
    DB_REQUIRE(value.is_object(), what + " is not an object");
    const JsonValue* dtype = value.find("dtype");
    const JsonValue* shape = value.find("shape");
    const JsonValue* offsets = value.find("data_offsets");
    DB_REQUIRE(dtype && shape && offsets, what + " lacks dtype, shape or data_offsets");
    Entry e;
    e.dtype = dtype->as_string("dtype");
    for (const JsonValue& n : shape->as_array("shape"))
      e.shape.push_back(n.as_integer("shape entry", 0, int64_t(1) << 48));
    const auto& range = offsets->as_array("data_offsets");
    DB_REQUIRE(range.size() == 2, what + ": data_offsets must hold two numbers");
    e.begin = range[0].as_integer("data_offsets", 0, file_bytes);
    e.end = range[1].as_integer("data_offsets", 0, file_bytes);
    DB_REQUIRE(e.begin <= e.end && data_start_ + e.end <= file_bytes,
               what + ": data_offsets outside the file");
    const int width = dtype_bytes(e.dtype);
    DB_REQUIRE(width == 0 || e.end - e.begin == element_count(e.shape) * width,
               what + ": " + std::to_string(e.end - e.begin) + " bytes do not hold a " + e.dtype +
                   " tensor of shape " + shape_text(e.shape));
    tensors_[name] = e;
  }
}

const SafetensorsFile::Entry& SafetensorsFile::entry(const std::string& name) const {
  const auto it = tensors_.find(name);
  DB_REQUIRE(it != tensors_.end(), path_ + " has no tensor " + name);
  return it->second;
}

std::vector<float> SafetensorsFile::read_float(const std::string& name) const {
  const Entry& e = entry(name);
  std::vector<char> bytes(size_t(e.end - e.begin));
  std::ifstream in(path_, std::ios::binary);
  in.seekg(data_start_ + e.begin);
  in.read(bytes.data(), std::streamsize(bytes.size()));
  DB_REQUIRE(in, path_ + ": cannot read tensor " + name);
  if (e.dtype == "F32") return convert<uint32_t>(bytes, from_bits);
  if (e.dtype == "BF16") return convert<uint16_t>(bytes, bf16_to_float);
  if (e.dtype == "F16") return convert<uint16_t>(bytes, f16_to_float);
  if (e.dtype == "F64")
    return convert<uint64_t>(bytes,
                             [](uint64_t bits) { return float(std::bit_cast<double>(bits)); });
  throw Error(path_ + ": tensor " + name + " has dtype " + e.dtype +
              " (readable: F32, F16, BF16, F64)");
}

}  // namespace db
