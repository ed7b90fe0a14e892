// Which windows of the held-out files a run validates on (doc/data.md, "Validation windows"):
// `train.val_windows` windows spread evenly over the whole held-out set by a fixed stride, so
// they reach every region of every validation file, not only its first documents. The choice
// depends only on the number of windows the files hold and the count asked for, so every run of
// a suite validates on the same windows and `depthbench eval --windows N` reproduces them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/token_dataset.hpp"

namespace db::data {

// `count` windows of `available`, window k = ⌊k · available / count⌋ for k = 0 … count − 1
// (ascending, distinct); every window when count >= available. Throws db::Error when
// available < 1 or count < 1.
std::vector<int64_t> validation_windows(int64_t available, int64_t count);

// What a set of validation windows covers of the held-out set. Documents end with the
// end-of-document id; a document is covered when at least one scored target (tokens 1 … T−1 of
// a window) belongs to it. Without an end-of-document id the document counts are −1.
struct ValidationCoverage {
  int64_t windows = 0;
  int64_t tokens = 0;      // windows · T
  int64_t documents = -1;  // documents covered
  int64_t held_out_tokens = 0;
  int64_t held_out_documents = -1;  // every document of the held-out files (a last one without
                                    // its end-of-document id included)
  double token_fraction() const {
    return held_out_tokens > 0 ? double(tokens) / double(held_out_tokens) : 0;
  }
};

// One pass over the held-out files. `windows` ascending, as validation_windows returns them.
ValidationCoverage validation_coverage(const TokenDataset& data,
                                       const std::vector<int64_t>& windows, int64_t eod_id);

// The end-of-document id of token files from the manifest that describes the first of them
// (doc/tokenize.md); −1 when none does.
int64_t end_of_document_id(const std::vector<std::string>& files);

// A warning when validation covers fewer than `kThinDocuments` documents or less than
// `kThinFraction` of the held-out tokens ("" when it covers enough); doc/data.md.
constexpr int64_t kThinDocuments = 20;
constexpr double kThinFraction = 0.01;
std::string thin_validation_warning(const ValidationCoverage& coverage);

}  // namespace db::data
