// The inputs of a suite checked before any run starts (doc/sweeps.md, "Inputs checked before the
// sweep"): `plan` prints what is wrong, `sweep` refuses to start, instead of recording every run
// `failed` one after the other. Cheap by design: files are mapped and their headers, sizes and
// manifests checked, but ids are only sampled (the trainer still checks every id when it opens
// a file).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/validation_windows.hpp"
#include "train/run_config.hpp"

namespace db::sweep {

struct InputCheck {
  std::vector<std::string> problems;  // one line each, naming the key or the file
  int64_t train_tokens = 0;           // in the training files (0 when they could not be read)
  std::optional<data::ValidationCoverage> validation;  // of the suite's validation windows
  bool ok() const { return problems.empty(); }
};

// Ids sampled per token file, evenly spaced, the first and the last included.
constexpr int64_t kSampledIds = 4096;

// For the data every run of the suite reads (`base`: the suite's recipe; data, vocabulary,
// seq_len and val_windows are the same for all its runs): every glob of data.train_files and
// data.val_files matches; every file opens with the configured format and dtype and agrees with
// its manifest; the tokenizer's vocabulary (the manifest's vocab_size) fits model.vocab_size;
// sampled ids are below model.vocab_size; training and validation files share one tokenizer; the
// files hold at least one window of train.seq_len tokens. Never throws for a bad input.
InputCheck check_suite_inputs(const RunConfig& base);

}  // namespace db::sweep
