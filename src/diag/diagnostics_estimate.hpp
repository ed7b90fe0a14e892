// The work of a suite's diagnostics on one run, known before the run is trained: `plan` adds it
// to its estimate. It uses the same cost functions that `diagnose` prints before it starts, at
// the settings a sweep runs them with (the defaults).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "train/run_config.hpp"

namespace db::diag {

struct DiagnosticsEstimate {
  int window_len = 0;  // T_d: 512 tokens, or the run's seq_len when shorter
  int64_t forward_passes = 0, head_readouts = 0;
  // Forward passes at a third of training's FLOPs per token (no backward, no optimizer), and
  // 2·V·d per token of each readout through the LM head.
  double flops = 0;
  std::vector<std::pair<std::string, std::string>> skipped;  // named but not run: name, why
};

// `names` as a suite gives them: "all" or diagnostic names.
DiagnosticsEstimate estimate_diagnostics(const std::vector<std::string>& names,
                                         const ModelConfig& model, int seq_len);

}  // namespace db::diag
