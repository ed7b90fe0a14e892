#include "data/window_order.hpp"

#include <numeric>
#include <string>
#include <utility>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace db::data {

WindowOrder::WindowOrder(int64_t num_windows, uint64_t seed)
    : num_windows_(num_windows), seed_(seed) {
  DB_REQUIRE(num_windows_ >= 1,
             "window order: " + std::to_string(num_windows_) + " windows (need >= 1)");
}

const std::vector<int64_t>& WindowOrder::epoch_permutation(int64_t epoch) {
  DB_REQUIRE(epoch >= 0, "window order: negative epoch " + std::to_string(epoch));
  if (epoch == cached_epoch_) return permutation_;
  // Each epoch has its own named stream of the run seed, so epoch e's order does not depend on
  // how many random numbers earlier epochs drew, and resuming in epoch e needs only e.
  Rng rng(seed_, "data/window_order/epoch=" + std::to_string(epoch));
  permutation_.resize(static_cast<std::size_t>(num_windows_));
  std::iota(permutation_.begin(), permutation_.end(), int64_t{0});
  // Fisher–Yates (Durstenfeld): for i from n-1 down to 1 swap slot i with a uniform j in [0, i].
  // Rng::below is a plain modulo; its bias, about n / 2^64, is irrelevant for any dataset.
  for (int64_t i = num_windows_ - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i) + 1));
    std::swap(permutation_[i], permutation_[j]);
  }
  cached_epoch_ = epoch;
  return permutation_;
}

int64_t WindowOrder::window_at(int64_t position) {
  DB_REQUIRE(position >= 0, "window order: negative position " + std::to_string(position));
  return epoch_permutation(position / num_windows_)[position % num_windows_];
}

}  // namespace db::data
