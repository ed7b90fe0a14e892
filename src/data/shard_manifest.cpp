#include "data/shard_manifest.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace db::data {
namespace {

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t\r");
  size_t end = text.find_last_not_of(" \t\r");
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

int64_t whole_number(const std::string& path, const std::string& key, const std::string& text) {
  try {
    size_t used = 0;
    long long value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::exception&) {
  }
  DB_REQUIRE(false, "manifest '" + path + "': " + key + " = '" + text + "' is not a whole number");
  return 0;
}

}  // namespace

ShardManifest read_shard_manifest(const std::string& path) {
  std::ifstream in(path);
  DB_REQUIRE(in.good(), "manifest '" + path + "': cannot open");
  ShardManifest manifest;
  manifest.path = path;
  std::map<std::string, std::string> tokenize;  // the [tokenize] section
  std::string section, line;
  while (std::getline(in, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    if (line.front() == '[' && line.back() == ']') {
      section = line.substr(1, line.size() - 2);
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (section == "tokenize") tokenize[key] = value;
    if (section == "shards") manifest.shard_tokens[key] = whole_number(path, key, value);
  }
  for (const char* key : {"vocab_size", "eod_id", "dtype", "output_format"})
    DB_REQUIRE(tokenize.count(key), "manifest '" + path + "': no " + key + " in [tokenize]");
  manifest.tokenizer = tokenize["tokenizer"];
  manifest.vocab_size = whole_number(path, "vocab_size", tokenize["vocab_size"]);
  manifest.eod_id = whole_number(path, "eod_id", tokenize["eod_id"]);
  const std::string& dtype = tokenize["dtype"];
  DB_REQUIRE(dtype == "uint16" || dtype == "uint32",
             "manifest '" + path + "': dtype '" + dtype + "' (expected uint16 or uint32)");
  manifest.dtype_bytes = dtype == "uint16" ? 2 : 4;
  manifest.output_format = tokenize["output_format"];
  const std::string& layout = manifest.output_format;
  DB_REQUIRE(
      layout == "npy" || layout == "olmo" || layout == "llmc",
      "manifest '" + path + "': output_format '" + layout + "' (expected npy, olmo or llmc)");
  return manifest;
}

std::string tokenizer_location(const ShardManifest& manifest) {
  namespace fs = std::filesystem;
  const fs::path stored = manifest.tokenizer;
  if (manifest.tokenizer == "bytes" || stored.empty() || stored.is_absolute())
    return manifest.tokenizer;
  const fs::path beside = fs::path(manifest.path).parent_path() / stored;
  return fs::exists(beside) ? beside.string() : manifest.tokenizer;
}

std::optional<ShardManifest> manifest_describing(const std::string& token_file) {
  namespace fs = std::filesystem;
  // Beside the name given, else beside the real file when that name is a symbolic link.
  std::error_code error;
  for (const fs::path& file : {fs::path(token_file), fs::canonical(token_file, error)}) {
    if (file.empty()) continue;
    const fs::path path = file.parent_path() / "manifest.ini";
    if (!fs::exists(path)) continue;
    ShardManifest manifest = read_shard_manifest(path.string());
    if (manifest.shard_tokens.count(file.filename().string())) return manifest;
  }
  return std::nullopt;
}

}  // namespace db::data
