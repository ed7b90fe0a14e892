// Opening a token file so that it cannot be misread (doc/data.md, "Manifests"): when the
// manifest.ini beside it describes it, the manifest's dtype, layout and vocabulary are checked
// against the run's settings and used where the run left them open, and the opened file must
// hold exactly the tokens the manifest lists.
#pragma once
#include <string>
#include <vector>

#include "data/shard_manifest.hpp"
#include "data/token_file.hpp"

namespace db::data {

// `run` holds the run's settings (raw_dtype_bytes 0 = not set). Throws db::Error with one line
// naming the file, the manifest and both values of any contradiction.
TokenFile open_token_file(const std::string& path, const TokenFileOptions& run);

// The options a file described by `manifest` is opened with; refuses contradictions.
TokenFileOptions options_from_manifest(const std::string& path, const ShardManifest& manifest,
                                       const TokenFileOptions& run);

// Refuses a file list whose manifests disagree on the tokenization (tokenizer, vocab_size,
// eod_id): training and validation shards made by two tokenizers. Files without a manifest are
// not compared.
void require_one_tokenization(const std::vector<std::string>& files);

}  // namespace db::data
