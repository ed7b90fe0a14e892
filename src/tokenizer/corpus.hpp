// `depthbench tokenize` without the option parsing: turns text files into token shards on every
// rank of a communicator and writes the manifest (doc/tokenize.md).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "tokenizer/documents.hpp"
#include "tokenizer/token_writer.hpp"
#include "tokenizer/tokenizer.hpp"

namespace db::tokenizer {

struct CorpusOptions {
  std::vector<std::string> inputs;  // files or glob patterns
  std::string format = "auto";      // auto: jsonl for *.jsonl / *.json, text otherwise
  DocumentOptions documents;        // format is resolved from `format`
  double val_fraction = 0.0;        // share of documents written to the val shards
  OutputFormat output_format = OutputFormat::npy;
  std::string dtype = "auto";  // auto: uint16 when the vocabulary fits, else uint32
  std::string out_dir;
};

struct CorpusSummary {
  DocumentCounts counts;  // summed over ranks
  int64_t documents_train = 0, documents_val = 0;
  int64_t tokens_train = 0, tokens_val = 0;
  int64_t input_files = 0;
  double seconds = 0;  // slowest rank, reading + encoding + writing
  std::string dtype;
};

// Expands glob patterns (a plain path must exist), removes duplicates and sorts the list, so
// that every rank sees the same files in the same order.
std::vector<std::string> expand_inputs(const std::vector<std::string>& patterns);

// Collective over `comm`. Each rank writes DIR/train_rankRRR.EXT (and val_rankRRR.EXT when
// val_fraction > 0), EXT as shard_extension says; rank 0 writes DIR/manifest.ini last, after
// every shard is complete.
CorpusSummary tokenize_corpus(const CorpusOptions& options, Tokenizer& tokenizer, MPI_Comm comm);

// Deterministic validation choice from the document's identity (file name and byte offset), so
// it does not depend on the number of ranks.
bool is_validation_document(const std::string& file_name, int64_t offset, double val_fraction);

}  // namespace db::tokenizer
