// `depthbench eval` (doc/eval.md): the loss of given weights on given token files. Windows are
// the contiguous T-token windows of the files concatenated (doc/data.md), N spread evenly as
// training's validation picks them (data/validation_windows.hpp), or a seeded sample; each window's
// loss is the mean next-token loss of its T−1 targets, exactly as training's validation computes
// it, so evaluating a run's validation windows reproduces its recorded validation loss.
// Per-document losses group the scored targets by the document they belong to (documents end with
// the end-of-document id). Windows are dealt over the ranks.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/communicator.hpp"
#include "io/checkpoint.hpp"

namespace db::eval {

struct EvalOptions {
  std::string weights_file;  // or a Hugging Face folder (--hf); names the weights in messages
  std::vector<std::string> data_globs;
  std::string format = "auto";  // token file format (doc/data.md)
  int dtype_bytes = 0;          // headerless token width; 0 = from the manifest or the name
  int seq_len = 0;              // window length T; 0 = the context the weights were trained with
  int64_t first_windows = 0;   // evaluate N windows spread evenly (0 with no sample = every window)
  int64_t sample_windows = 0;  // or N distinct windows drawn with `seed`
  uint64_t seed = 1234;        // of the sample and the bootstraps
  int64_t eod_id = -1;         // end-of-document id; −1 = none (no per-document losses)
  int bootstrap = 1000;        // resamples of the 95% intervals
  std::string backend = "cpu";  // where the forward passes run: cpu | cuda | auto
};

struct EvalResult {
  int seq_len = 0;
  int64_t available_windows = 0;
  std::vector<int64_t> windows;                   // dataset window indices, in evaluation order
  std::vector<double> window_losses;              // mean loss of each window's T−1 targets
  double mean_loss = 0, ci_low = 0, ci_high = 0;  // mean over windows, 95% window bootstrap
  // Documents with at least one scored target, by index in the concatenated files (0-based).
  std::vector<int64_t> documents;
  std::vector<double> document_nll, document_targets;  // summed loss and scored targets
  double document_loss = 0, document_ci_low = 0, document_ci_high = 0;  // Σ nll / Σ targets
};

// The windows to evaluate: `first` spread evenly as training's validation picks them (all when
// first and sample are 0), or `sample`
// distinct ones drawn without replacement by a stream keyed by the seed.
std::vector<int64_t> choose_windows(int64_t available, int64_t first, int64_t sample,
                                    uint64_t seed);

// The weights come from load_weights or read_hf_checkpoint (io/).
EvalResult evaluate(const EvalOptions& options, const Checkpoint& weights,
                    const Communicator& comm);

}  // namespace db::eval
