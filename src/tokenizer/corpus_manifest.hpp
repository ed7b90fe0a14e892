// DIR/manifest.ini of `depthbench tokenize`: what made the shards and what they hold
// (doc/tokenize.md, "Output"; read back by data/shard_manifest.hpp).
#pragma once
#include <string>
#include <vector>

#include "tokenizer/corpus.hpp"
#include "tokenizer/shard_files.hpp"

namespace db::tokenizer {

struct ManifestContents {
  const CorpusOptions& options;
  const Tokenizer& tokenizer;
  const CorpusSummary& summary;
  std::string input_format;  // the resolved format, or "mixed"
  int ranks = 1;
  std::vector<Shard> shards;  // train, then val
};

// Written via manifest.ini.tmp and renamed, so a manifest that exists is complete.
void write_corpus_manifest(const ManifestContents& contents);

}  // namespace db::tokenizer
