// One training run, data-parallel over the ranks of its communicator (rank 0 writes the run
// file): micro-batches with gradient accumulation to the global batch, all-reduced gradients,
// clipping, AdamW, periodic validation, checkpoints, divergence detection, and resume from the
// last checkpoint when the same run is started again.
#pragma once
#include <cstdint>
#include <string>

#include "core/communicator.hpp"
#include "train/run_config.hpp"

namespace db {

struct TrainResult {
  std::string status;  // completed | diverged | failed | interrupted | skipped
  std::string reason;
  int64_t status_step = -1;
  double final_val_loss = 0;
  double seconds = 0;
  bool environment_fault = false;  // interrupted by the machine (disk full, I/O error)
};

// Paths of a run's files in its output directory.
struct RunPaths {
  std::string run_file;             // NAME.h5 (NAME.h5.tmp while running)
  std::string checkpoint;           // NAME.ckpt (HDF5): resumable state of an unfinished run
  std::string checkpoint_run_file;  // NAME.ckpt.run (HDF5): the run file as of that checkpoint
  std::string weights;              // NAME.weights (HDF5): final weights of a completed run
  std::string log;                  // NAME.log: the run's progress lines, appended per attempt
  std::string initial_weights;      // NAME.init.weights (HDF5): weights before the first step
  static RunPaths of(const RunConfig& config);
};

// Trains the run unless its run file is already complete (then `skipped`). Never throws for a
// problem of the run itself: a failure is recorded in the run file and returned.
TrainResult train_run(const RunConfig& config, const Communicator& comm, bool verbose = true);

}  // namespace db
