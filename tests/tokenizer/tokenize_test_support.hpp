// Helpers shared by the tests that run `depthbench tokenize` in-process on one MPI rank:
// scratch folders, files, the command itself, shard and manifest readers.
#pragma once
#include <mpi.h>

#include <boost/test/unit_test.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "app/commands.hpp"
#include "tokenizer/tokenizer.hpp"
#include "util/text_file.hpp"

namespace db::tokenizer::test {

namespace fs = std::filesystem;
using Ids = std::vector<uint32_t>;

struct MpiFixture {
  MpiFixture() { MPI_Init(nullptr, nullptr); }
  ~MpiFixture() { MPI_Finalize(); }
};

inline fs::path scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("depthbench_tokenize_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

inline void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

inline int run(std::vector<std::string> args) {
  args.insert(args.begin(), "tokenize");
  args.push_back("--quiet");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return db::app::run_tokenize_command(static_cast<int>(argv.size()), argv.data());
}

// The ids of a shard of `dtype_bytes`; the header of .npy (128 bytes) and llm.c (1024 bytes)
// files is skipped.
inline Ids read_ids(const fs::path& path, int dtype_bytes = 2) {
  std::string bytes = read_text_file(path.string());
  if (bytes.starts_with("\x93NUMPY")) bytes = bytes.substr(128);
  if (path.extension() == ".bin") bytes = bytes.substr(1024);
  Ids ids(bytes.size() / dtype_bytes);
  for (size_t i = 0; i < ids.size(); ++i)
    for (int b = 0; b < dtype_bytes; ++b)
      ids[i] |= uint32_t(static_cast<unsigned char>(bytes[dtype_bytes * i + b])) << (8 * b);
  return ids;
}
inline Ids read_u16(const fs::path& path) {
  return read_ids(path, 2);
}

inline std::map<std::string, std::string> read_manifest(const fs::path& path) {
  std::map<std::string, std::string> values;
  std::istringstream in(read_text_file(path.string()));
  for (std::string line; std::getline(in, line);) {
    size_t eq = line.find(" = ");
    if (eq != std::string::npos) values[line.substr(0, eq)] = line.substr(eq + 3);
  }
  return values;
}

inline Ids bytes_then_eod(const std::string& text) {
  Ids ids(text.begin(), text.end());
  for (auto& id : ids) id &= 0xFF;
  ids.push_back(256);
  return ids;
}

}  // namespace db::tokenizer::test
