#include "io/weights_source.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "io/safetensors_weights.hpp"

namespace db {
namespace {

bool is_hdf5(const std::string& path) {
  char signature[8] = {};
  std::ifstream(path, std::ios::binary).read(signature, sizeof signature);
  return std::memcmp(signature, "\x89HDF\r\n\x1a\n", sizeof signature) == 0;
}

}  // namespace

Checkpoint load_weights(const std::string& path) {
  namespace fs = std::filesystem;
  DB_REQUIRE(fs::exists(path), "weights file " + path + " not found");
  if (fs::is_directory(path) || !is_hdf5(path)) return read_safetensors_weights(path);
  Checkpoint described = read_weights_description(path);
  Checkpoint weights = *read_checkpoint(path, described.model);
  weights.seq_len = described.seq_len;
  return weights;
}

}  // namespace db
