// `depthbench tokenize` without the option parsing: turns text files into token shards with
// every rank of a communicator and several threads per rank, and writes the manifest
// (doc/tokenize.md).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/token_format.hpp"
#include "tokenizer/documents.hpp"
#include "tokenizer/tokenizer.hpp"

namespace db::tokenizer {

struct CorpusOptions {
  std::vector<std::string> inputs;  // files, directories or glob patterns (`**` recurses)
  std::string format = "auto";      // auto: per file, jsonl for *.jsonl / *.json, else text
  DocumentOptions documents;        // format is resolved from `format`
  double val_fraction = 0.0;        // share of documents written to the val shards
  uint64_t seed = 0;                // of the validation split
  data::TokenFormat output_format = data::TokenFormat::npy;
  std::string dtype = "auto";      // auto: uint16 when the vocabulary fits, else uint32
  int64_t shard_tokens = 0;        // ids per shard at most; 0: one shard per split (llm.c: 10^8)
  std::optional<uint32_t> bos_id;  // put before every document when set
  int threads = 0;                 // encoding threads per rank; 0: from the cores it may use
  bool progress = true;            // the progress line on stderr (rank 0)
  // Dropped or repaired lines: each rank keeps the locations of its first `issues_kept`;
  // `strict` stops at the first one instead (an error naming it).
  std::size_t issues_kept = 5;
  bool strict = false;
  std::string out_dir;
};

struct CorpusSummary {
  DocumentCounts counts;  // summed over ranks
  int64_t documents_train = 0, documents_val = 0;
  int64_t tokens_train = 0, tokens_val = 0;
  int64_t input_files = 0;
  int64_t shards_train = 0, shards_val = 0;
  int threads = 1;         // per rank
  double seconds = 0;      // slowest rank, reading + encoding + writing
  double cpu_seconds = 0;  // the same work's processor time, summed over threads and ranks
  std::string dtype;
  // Rank 0: "FILE:LINE: why" of the dropped or repaired lines each rank kept, in rank order.
  std::vector<std::string> issues;
};

// Collective over `comm`. Writes DIR/train_NNNNNN.EXT (and val_NNNNNN.EXT when
// val_fraction > 0), byte for byte the same for any number of ranks and threads; rank 0 writes
// DIR/manifest.ini last, after every shard is complete.
CorpusSummary tokenize_corpus(const CorpusOptions& options, Tokenizer& tokenizer, MPI_Comm comm);

// Threads per rank when --threads is not given: the cores this process may run on, shared with
// the other ranks of its node unless the launcher bound each rank to its own cores.
int default_thread_count(MPI_Comm comm);

}  // namespace db::tokenizer
