// The gradient sum of the MPI reducer: every element is summed in rank order,
// ((x_0 + x_1) + x_2) + ... + x_{p-1}, whatever the length of the range it belongs to and
// whatever algorithm the MPI library would pick. MPI_Allreduce's summation order depends on the
// message size (Open MPI switches between recursive doubling and ring algorithms, and a ring's
// chunk boundaries move with the count), so a gradient reduced in buckets would differ in the
// last bit from one reduced in one call on three or more ranks. Here only copies go over the
// wire (which are exact in any order): each range is cut into one slice per rank, every rank
// sends its part of slice k to rank k, rank k adds the p parts in rank order, then sends the sum
// to everybody. That moves 2·(p−1)/p of the range per rank, as a ring all-reduce does.
//
// Sums are started without blocking and complete in start order; every rank must start the
// same ranges in the same order. MPI moves data only inside MPI calls, so progress() lets
// started sums advance (the trainer calls it as the backward pass goes on).
#pragma once
#include <mpi.h>

#include <cstdint>
#include <vector>

#include "core/communicator.hpp"

namespace db {

class RankOrderSum {
 public:
  explicit RankOrderSum(const Communicator& comm) : comm_(comm) {}
  RankOrderSum(const RankOrderSum&) = delete;
  RankOrderSum& operator=(const RankOrderSum&) = delete;

  // Starts the in-place sum of values[0, count) (host memory, untouched by the caller until
  // finish()). Collective in the sense that every rank starts the same sequence of counts.
  void start(float* values, int64_t count);
  // Advances started sums without blocking.
  void progress();
  // Blocks until every started sum is complete; the next start begins a new sequence.
  void finish();
  // Sums values in place now: start + finish.
  void sum_now(float* values, int64_t count);

 private:
  struct Sum {
    float* values = nullptr;
    int64_t count = 0;
    int tag = 0;
    std::vector<MPI_Request> gathering;  // parts of this rank's slice in, other parts out
    std::vector<MPI_Request> spreading;  // this rank's summed slice out, the others' in
  };
  int64_t slice_begin(const Sum& s, int rank) const;
  void post_gathering(Sum& s, std::vector<float>& parts);
  void add_and_spread(Sum& s, std::vector<float>& parts);

  const Communicator& comm_;
  std::vector<Sum> sums_;  // started since the last finish, in start order
  size_t added_ = 0;       // sums_[0, added_): this rank's slice summed, spreading posted
  size_t spread_ = 0;      // sums_[0, spread_): complete
  std::vector<std::vector<float>> parts_;  // received parts, by start index, kept across steps
};

}  // namespace db
