// The order in which a trainer visits the windows of a TokenDataset: a fresh Fisher–Yates
// shuffle per epoch, fully determined by (seed, epoch). A run's position in this order is one
// integer, so a restart resumes exactly by
// saving `position` and calling window_at(position) again.
#pragma once
#include <cstdint>
#include <vector>

namespace db::data {

class WindowOrder {
 public:
  // Throws db::Error when num_windows < 1.
  WindowOrder(int64_t num_windows, uint64_t seed);

  int64_t num_windows() const { return num_windows_; }
  uint64_t seed() const { return seed_; }

  // The window visited at global `position` (>= 0) counted across epochs:
  // epoch = position / num_windows, slot = position % num_windows.
  // O(1) while the epoch stays the same; O(num_windows) once when a new epoch is entered
  // (the one epoch's permutation is cached, 8 bytes per window). Not thread-safe.
  int64_t window_at(int64_t position);

  // The whole permutation of one epoch: every window index exactly once.
  const std::vector<int64_t>& epoch_permutation(int64_t epoch);

 private:
  int64_t num_windows_;
  uint64_t seed_;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> permutation_;
};

}  // namespace db::data
