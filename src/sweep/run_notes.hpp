// What a user should know about a planned run before training it: a design that silently
// becomes another (Block AttnRes with blocks of one sublayer is Full AttnRes) and the disk its
// files take. `plan` prints both, `sweep` warns about the first.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/model_config.hpp"
#include "train/run_config.hpp"

namespace db::sweep {

// "" unless the run's design, at this shape and with these options, is in fact another design.
std::string design_note(const ModelConfig& model);

// Bytes of the files a run writes beside its run file (doc/hdf5-schema.md): weights are fp32,
// 4 bytes per parameter, so the embedding and head of a large vocabulary dominate small models
// (V = 128 256, d = 128: embedding and head 2 x 16.4 M parameters, over 130 MB per weight file).
struct DiskEstimate {
  double weights = 0;       // NAME.weights
  double init_weights = 0;  // NAME.init.weights (train.save_initial_weights)
  double run_file = 0;      // NAME.h5: curves, validation windows, attributes (approximate)
  double checkpoint = 0;    // NAME.ckpt while unfinished: weights + AdamW moments
  double kept() const { return weights + init_weights + run_file; }
  // While training: the checkpoint and, during a checkpoint write, its .tmp beside it.
  double peak() const { return init_weights + run_file + 2 * checkpoint; }
};
DiskEstimate estimate_disk(const RunConfig& config, const ParameterCounts& counts);

// "150 MB", "1.2 GB", "830 KB" (decimal units, like df -H).
std::string format_bytes(double bytes);

}  // namespace db::sweep
