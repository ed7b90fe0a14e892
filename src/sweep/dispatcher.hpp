// Dynamic hand-out of run indices to the groups of a sweep (no idle master rank): a counter in
// an MPI window owned by world rank 0; each group leader takes the next index with an atomic
// MPI_Fetch_and_op and broadcasts it to its group. Runs are planned longest first, so a group
// that finishes early takes the next long run and no group idles while runs remain.
#pragma once
#include <mpi.h>

#include <cstdint>

#include "core/communicator.hpp"

namespace db::sweep {

class Dispatcher {
 public:
  // Collective over `world`; `group` is this rank's run communicator (its rank 0 is the leader).
  Dispatcher(const Communicator& world, const Communicator& group, int64_t run_count);
  ~Dispatcher();  // collective over world (MPI_Win_free)
  Dispatcher(const Dispatcher&) = delete;
  Dispatcher& operator=(const Dispatcher&) = delete;

  // Collective over the group: the next run index, or -1 when none remain or `stop` (decided
  // by the leader) is true.
  int64_t next(bool stop);

 private:
  const Communicator& group_;
  int64_t run_count_;
  MPI_Win window_ = MPI_WIN_NULL;
  int64_t* counter_ = nullptr;
};

}  // namespace db::sweep
