// The safetensors format (doc/export.md "The safetensors format"), written and read without a
// dependency: an 8-byte little-endian header length, a JSON header naming every tensor with its
// dtype, shape and byte range (plus a `__metadata__` map of strings), padded with spaces to a
// multiple of 8, then the raw little-endian arrays.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace db {

// One float32 tensor to write.
struct TensorView {
  std::string name;
  std::vector<int64_t> shape;
  const float* data;
};

// Writes the tensors (in this order) as F32, atomically (PATH.tmp renamed to PATH).
void write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata);

// A safetensors file whose header has been read and checked; tensors are read on demand.
class SafetensorsFile {
 public:
  struct Entry {
    std::string dtype;  // "F32", "BF16", ...
    std::vector<int64_t> shape;
    int64_t begin = 0, end = 0;  // byte range after the header
  };

  // Throws db::Error naming the file when it is missing or malformed.
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return path_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::map<std::string, Entry>& tensors() const { return tensors_; }
  bool has(const std::string& name) const { return tensors_.count(name) > 0; }
  const Entry& entry(const std::string& name) const;  // throws naming the file and tensor

  // The tensor's values as float32: F32 as stored (bit for bit), F16, BF16 and F64 converted.
  std::vector<float> read_float(const std::string& name) const;

 private:
  std::string path_;
  int64_t data_start_ = 0;
  std::map<std::string, std::string> metadata_;
  std::map<std::string, Entry> tensors_;
};

}  // namespace db
