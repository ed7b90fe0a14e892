#include "tokenizer/batch_encoder.hpp"

#include <omp.h>

#include "core/error.hpp"

namespace db::tokenizer {

void DocumentBatch::add(std::string_view document, bool validation, std::string origin) {
  text.append(document);
  text_ends.push_back(text.size());
  is_validation.push_back(validation);
  origins.push_back(std::move(origin));
}

void DocumentBatch::clear() {
  text.clear();
  text_ends.clear();
  is_validation.clear();
  origins.clear();
  train_ids.clear();
  val_ids.clear();
}

BatchEncoder::BatchEncoder(const Tokenizer& tokenizer, int threads, std::optional<uint32_t> bos)
    : bos_(bos), eod_(tokenizer.eod_id()) {
  DB_REQUIRE(threads >= 1, "--threads must be at least 1");
  for (int t = 0; t < threads; ++t) tokenizers_.push_back(tokenizer.clone());
}

void BatchEncoder::encode(std::vector<DocumentBatch>& batches) {
  const int64_t count = static_cast<int64_t>(batches.size());
  // An exception must not leave an OpenMP region; the first one is rethrown after it.
  std::vector<std::string> errors(batches.size());
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads())
  for (int64_t b = 0; b < count; ++b) {
    Tokenizer& tokenizer = *tokenizers_[omp_get_thread_num()];
    DocumentBatch& batch = batches[b];
    try {
      std::size_t start = 0;
      for (std::size_t d = 0; d < batch.documents(); ++d) {
        std::vector<uint32_t>& ids = batch.is_validation[d] ? batch.val_ids : batch.train_ids;
        if (bos_) ids.push_back(*bos_);
        try {
          tokenizer.encode(std::string_view(batch.text).substr(start, batch.text_ends[d] - start),
                           ids);
        } catch (const Error& e) {
          // A byte or character without a token: name the document that holds it.
          const std::string& origin = batch.origins[d];
          throw Error("document " + (origin.empty() ? std::to_string(d) : origin) + ": " +
                      e.what());
        }
        ids.push_back(eod_);
        start = batch.text_ends[d];
      }
    } catch (const std::exception& e) {
      errors[b] = e.what();
    }
  }
  for (const std::string& error : errors) DB_REQUIRE(error.empty(), error);
}

}  // namespace db::tokenizer
