#include "ops/rank_order_sum.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace db {
namespace {

// MPI counts are int; a longer range is summed as several (each still in rank order).
constexpr int64_t kMaxElementsPerSum = int64_t(1) << 30;
// Tags of consecutive sums (two each); MPI guarantees tags up to at least 32767, and a sum's
// messages cannot be confused with those of a sum 8000 starts earlier on the same pair of ranks
// because messages between two ranks with one tag arrive in order.
constexpr int kTagCycle = 16000;

}  // namespace

int64_t RankOrderSum::slice_begin(const Sum& s, int rank) const {
  return s.count * rank / comm_.size();
}

void RankOrderSum::start(float* values, int64_t count) {
  if (comm_.size() == 1 || count <= 0) return;
  if (count > kMaxElementsPerSum) {
    for (int64_t begin = 0; begin < count; begin += kMaxElementsPerSum)
      start(values + begin, std::min(kMaxElementsPerSum, count - begin));
    return;
  }
  const size_t index = sums_.size();
  if (parts_.size() <= index) parts_.resize(index + 1);
  Sum& s = sums_.emplace_back();
  s.values = values;
  s.count = count;
  s.tag = int(2 * (index % (kTagCycle / 2)));
  post_gathering(s, parts_[index]);
}

// parts: the slice of this rank from each of the other ranks, in rank order.
void RankOrderSum::post_gathering(Sum& s, std::vector<float>& parts) {
  const int me = comm_.rank(), p = comm_.size();
  const int64_t mine = slice_begin(s, me), length = slice_begin(s, me + 1) - mine;
  parts.resize(size_t(length) * (p - 1));  // allocated in the first step only
  s.gathering.reserve(2 * (p - 1));
  for (int r = 0; r < p; ++r) {
    if (r == me) continue;
    float* part = parts.data() + length * (r < me ? r : r - 1);
    MPI_CHECK(MPI_Irecv(part, int(length), MPI_FLOAT, r, s.tag, comm_.handle(),
                        &s.gathering.emplace_back()));
    const int64_t begin = slice_begin(s, r), theirs = slice_begin(s, r + 1) - begin;
    MPI_CHECK(MPI_Isend(s.values + begin, int(theirs), MPI_FLOAT, r, s.tag, comm_.handle(),
                        &s.gathering.emplace_back()));
  }
}

// Called once every part has arrived and every part of ours has left (the spreading writes
// into the slices that were sent).
void RankOrderSum::add_and_spread(Sum& s, std::vector<float>& parts) {
  const int me = comm_.rank(), p = comm_.size();
  const int64_t mine = slice_begin(s, me), length = slice_begin(s, me + 1) - mine;
  float* own = s.values + mine;
  auto part_of = [&](int r) {
    return r == me ? own : parts.data() + length * (r < me ? r : r - 1);
  };
  // The running sum starts with rank 0's part: in `own` on rank 0, else in rank 0's slot.
  float* total = part_of(0);
  for (int r = 1; r < p; ++r) {
    const float* add = part_of(r);
    for (int64_t i = 0; i < length; ++i) total[i] += add[i];
  }
  if (total != own) std::copy(total, total + length, own);
  s.spreading.reserve(2 * (p - 1));
  for (int r = 0; r < p; ++r) {
    if (r == me) continue;
    const int64_t begin = slice_begin(s, r), theirs = slice_begin(s, r + 1) - begin;
    MPI_CHECK(MPI_Irecv(s.values + begin, int(theirs), MPI_FLOAT, r, s.tag + 1, comm_.handle(),
                        &s.spreading.emplace_back()));
    MPI_CHECK(MPI_Isend(own, int(length), MPI_FLOAT, r, s.tag + 1, comm_.handle(),
                        &s.spreading.emplace_back()));
  }
}

// In start order only: every rank then posts the spreading of its sums in the same order (a
// sum's messages share their tag with the sum kTagCycle / 2 starts later), and a call costs
// one test per sum that advanced, not one per started sum.
void RankOrderSum::progress() {
  int done = 1;
  while (added_ < sums_.size() && done) {
    Sum& s = sums_[added_];
    MPI_CHECK(MPI_Testall(int(s.gathering.size()), s.gathering.data(), &done, MPI_STATUSES_IGNORE));
    if (done) add_and_spread(s, parts_[added_++]);
  }
  done = 1;
  while (spread_ < added_ && done) {
    Sum& s = sums_[spread_];
    MPI_CHECK(MPI_Testall(int(s.spreading.size()), s.spreading.data(), &done, MPI_STATUSES_IGNORE));
    if (done) ++spread_;
  }
}

void RankOrderSum::finish() {
  for (; added_ < sums_.size(); ++added_) {
    Sum& s = sums_[added_];
    MPI_CHECK(MPI_Waitall(int(s.gathering.size()), s.gathering.data(), MPI_STATUSES_IGNORE));
    add_and_spread(s, parts_[added_]);
  }
  for (; spread_ < sums_.size(); ++spread_) {
    Sum& s = sums_[spread_];
    MPI_CHECK(MPI_Waitall(int(s.spreading.size()), s.spreading.data(), MPI_STATUSES_IGNORE));
  }
  sums_.clear();
  added_ = spread_ = 0;
}

void RankOrderSum::sum_now(float* values, int64_t count) {
  start(values, count);
  finish();
}

}  // namespace db
