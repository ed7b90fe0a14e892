// The manifest.ini that `depthbench tokenize` writes beside its shards (doc/tokenize.md): which
// tokenizer made them, its vocabulary size and end-of-document id, the dtype and layout, and
// every shard's token count. The trainer reads it so that a shard is never read with another
// dtype or vocabulary than the one it was written with (doc/data.md, "Manifests").
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace db::data {

struct ShardManifest {
  std::string path;       // the manifest.ini itself, for messages
  std::string tokenizer;  // as tokenize described it
  int64_t vocab_size = 0;
  int64_t eod_id = -1;
  int dtype_bytes = 0;                          // 2 (uint16) or 4 (uint32)
  std::string output_format;                    // "npy", "olmo" (headerless) or "llmc"
  std::map<std::string, int64_t> shard_tokens;  // file name -> token count
};

// Parses a manifest. Throws db::Error naming the file and the key when one is missing or bad.
ShardManifest read_shard_manifest(const std::string& path);

// Where the manifest's tokenizer is, seen from the current directory: "bytes" and absolute paths
// as written (tokenize writes paths absolute); a relative path of an older manifest relative to
// the manifest's folder when it is there, else as written (relative to where tokenize ran).
std::string tokenizer_location(const ShardManifest& manifest);

// The manifest in the directory of `token_file` when it lists that file's name among its shards;
// none otherwise (a file copied elsewhere, or data not written by tokenize).
std::optional<ShardManifest> manifest_describing(const std::string& token_file);

}  // namespace db::data
