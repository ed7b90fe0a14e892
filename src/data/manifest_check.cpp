#include "data/manifest_check.hpp"

#include <filesystem>
#include <map>

#include "core/error.hpp"

namespace db::data {
namespace {

std::string dtype_name(int dtype_bytes) {
  return dtype_bytes == 2 ? "uint16" : dtype_bytes == 4 ? "uint32" : "unset";
}

}  // namespace

TokenFileOptions options_from_manifest(const std::string& path, const ShardManifest& manifest,
                                       const TokenFileOptions& run) {
  const std::string where = "token file '" + path + "': its manifest '" + manifest.path + "'";
  TokenFileOptions options = run;
  // A model may have more embedding rows than the tokenizer has ids (padding), never fewer.
  DB_REQUIRE(run.vocab_size <= 0 || manifest.vocab_size <= run.vocab_size,
             where + " says vocab_size " + std::to_string(manifest.vocab_size) +
                 ", but the run has model.vocab_size = " + std::to_string(run.vocab_size));
  DB_REQUIRE(run.vocab_size <= 0 || manifest.eod_id < run.vocab_size,
             where + " says eod_id " + std::to_string(manifest.eod_id) +
                 ", outside the run's model.vocab_size = " + std::to_string(run.vocab_size));
  const TokenFormat layout = manifest.output_format == "npy"    ? TokenFormat::npy
                             : manifest.output_format == "llmc" ? TokenFormat::llmc_bin
                                                                : TokenFormat::olmo_raw;
  DB_REQUIRE(run.format == TokenFormat::auto_detect || run.format == layout,
             where + " says output_format " + manifest.output_format +
                 ", but the run has data.format = " + to_string(run.format));
  options.format = layout;  // a raw file is then never taken for an llm.c shard
  if (layout == TokenFormat::olmo_raw) {
    // data.dtype_bytes only describes headerless files; a header speaks for itself.
    DB_REQUIRE(run.raw_dtype_bytes == 0 || run.raw_dtype_bytes == manifest.dtype_bytes,
               where + " says dtype " + dtype_name(manifest.dtype_bytes) +
                   ", but the run has data.dtype_bytes = " + std::to_string(run.raw_dtype_bytes) +
                   " (" + dtype_name(run.raw_dtype_bytes) + ")");
    options.raw_dtype_bytes = manifest.dtype_bytes;
  }
  return options;
}

TokenFile open_token_file(const std::string& path, const TokenFileOptions& run) {
  const std::optional<ShardManifest> manifest = manifest_describing(path);
  if (!manifest) return TokenFile(path, run);
  TokenFile file(path, options_from_manifest(path, *manifest, run));
  const std::string where = "token file '" + path + "'";
  DB_REQUIRE(file.dtype_bytes() == manifest->dtype_bytes,
             where + " holds " + dtype_name(file.dtype_bytes()) + " ids, its manifest '" +
                 manifest->path + "' says " + dtype_name(manifest->dtype_bytes));
  const std::string name = std::filesystem::path(path).filename().string();
  const int64_t listed =
      manifest->shard_tokens.count(name)
          ? manifest->shard_tokens.at(name)
          : manifest->shard_tokens.at(std::filesystem::canonical(path).filename().string());
  DB_REQUIRE(file.num_tokens() == listed, where + " holds " + std::to_string(file.num_tokens()) +
                                              " tokens, its manifest '" + manifest->path +
                                              "' lists " + std::to_string(listed) +
                                              " (a truncated or replaced copy?)");
  return file;
}

void require_one_tokenization(const std::vector<std::string>& files) {
  std::optional<ShardManifest> first;
  std::map<std::string, bool> seen;  // one manifest per directory is enough
  for (const std::string& file : files) {
    const std::string directory = std::filesystem::path(file).parent_path().string();
    if (seen.count(directory)) continue;
    seen[directory] = true;
    std::optional<ShardManifest> manifest = manifest_describing(file);
    if (!manifest) continue;
    if (!first) {
      first = std::move(manifest);
      continue;
    }
    auto identity = [](const ShardManifest& m) {
      return m.tokenizer + " (vocab_size " + std::to_string(m.vocab_size) + ", eod_id " +
             std::to_string(m.eod_id) + ")";
    };
    DB_REQUIRE(identity(*manifest) == identity(*first),
               "token files of two tokenizations: '" + first->path + "' says " + identity(*first) +
                   ", '" + manifest->path + "' says " + identity(*manifest));
  }
}

}  // namespace db::data
