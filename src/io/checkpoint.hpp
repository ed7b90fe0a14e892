// Weight and checkpoint files beside the run file (doc/hdf5-schema.md "Weight and checkpoint
// files"): NAME.ckpt, NAME.weights and NAME.init.weights. Each is written as .tmp and renamed,
// so a crash during the write leaves the previous file intact. A checkpoint holds everything a
// resumed run needs to continue bit for bit: weights, AdamW moments and step counter, the step
// reached and the best validation so far (the data position is derived from the step and the
// seed). Tensors are stored by name with their shapes, and the model config as attributes, so
// that the files describe themselves to tools outside DepthBench.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/model_config.hpp"

namespace db {

// Format 1 held one flat `params` vector; format 2 one dataset per parameter.
inline constexpr int kWeightsFormatVersion = 2;

struct Checkpoint {
  std::string run_id;  // must match the run being resumed
  ModelConfig model;   // names and shapes of the tensors
  int64_t seq_len = 0;  // the context the weights were trained with (0: not recorded)
  int64_t step = 0;    // steps completed
  int64_t adam_steps = 0;
  double best_val_loss = 0;
  int64_t best_step = -1;
  // In layout order; the AdamW moments are empty in weight files.
  std::vector<float> params, adam_m, adam_v;
};

void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);
// The run_id attribute, to decide whether a file belongs to a run before reading its tensors by
// that run's names. Empty optional when the file does not exist; throws when it is unreadable.
std::optional<std::string> read_checkpoint_run_id(const std::string& path);
// Reads the tensors by the names of `model`'s layout (or a format-1 flat file). Empty when the
// file does not exist; throws db::Error when it is unreadable or does not fit the model.
std::optional<Checkpoint> read_checkpoint(const std::string& path, const ModelConfig& model);
// The model config recorded in a format-2 file (its attributes), with the training seq_len
// in `seq_len`; throws naming the file when it is missing, unreadable or of format 1.
Checkpoint read_weights_description(const std::string& path);

}  // namespace db
