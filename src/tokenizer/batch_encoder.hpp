// Encodes documents on several threads of one rank. Documents are gathered into batches in
// input order; each batch is encoded by one thread; results are used in batch order, so the
// ids never depend on the number of threads (doc/tokenize.md, "Ranks and threads").
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace db::tokenizer {

struct DocumentBatch {
  std::string text;                    // the documents, one after the other
  std::vector<std::size_t> text_ends;  // end of each document in `text`
  std::vector<bool> is_validation;     // per document
  std::vector<std::string> origins;    // per document: where it is ("FILE (byte N)"), for errors
  // Filled by encode(): the ids of the training and of the validation documents, in order, each
  // document as [BOS] ids EOD.
  std::vector<uint32_t> train_ids, val_ids;

  void add(std::string_view document, bool validation, std::string origin = {});
  std::size_t documents() const { return text_ends.size(); }
  void clear();
};

class BatchEncoder {
 public:
  // One tokenizer copy per thread; `bos`: put before every document when set.
  BatchEncoder(const Tokenizer& tokenizer, int threads, std::optional<uint32_t> bos);
  // Encodes every batch, the batches spread over the threads.
  void encode(std::vector<DocumentBatch>& batches);
  int threads() const { return static_cast<int>(tokenizers_.size()); }

 private:
  std::vector<std::unique_ptr<Tokenizer>> tokenizers_;
  std::optional<uint32_t> bos_;
  uint32_t eod_;
};

}  // namespace db::tokenizer
