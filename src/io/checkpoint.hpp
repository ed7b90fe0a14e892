// Training checkpoints beside the run file: NAME.ckpt, written as .tmp and renamed, so a
// crash during the write leaves the previous checkpoint intact. Holds everything a resumed run
// needs to continue bit for bit: weights, AdamW moments and step counter, the step reached and
// the best validation so far (the data position is derived from the step and the seed).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace db {

struct Checkpoint {
  std::string run_id;  // must match the run being resumed
  int64_t step = 0;    // steps completed
  int64_t adam_steps = 0;
  double best_val_loss = 0;
  int64_t best_step = -1;
  std::vector<float> params, adam_m, adam_v;
};

void write_checkpoint(const std::string& path, const Checkpoint& checkpoint);
// Empty when the file does not exist; throws db::Error when it is unreadable.
std::optional<Checkpoint> read_checkpoint(const std::string& path);

}  // namespace db
