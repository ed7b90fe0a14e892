#include "sweep/dispatcher.hpp"

#include "core/error.hpp"

namespace db::sweep {

Dispatcher::Dispatcher(const Communicator& world, const Communicator& group, int64_t run_count)
    : group_(group), run_count_(run_count) {
  const MPI_Aint bytes = world.rank() == 0 ? sizeof(int64_t) : 0;
  MPI_CHECK(
      MPI_Win_allocate(bytes, sizeof(int64_t), MPI_INFO_NULL, world.handle(), &counter_, &window_));
  if (world.rank() == 0) {
    MPI_CHECK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, window_));
    *counter_ = 0;
    MPI_CHECK(MPI_Win_unlock(0, window_));
  }
  world.barrier();  // nobody fetches before the counter is zeroed
}

Dispatcher::~Dispatcher() {
  if (window_ != MPI_WIN_NULL) MPI_Win_free(&window_);
}

int64_t Dispatcher::next(bool stop) {
  int64_t index = -1;
  if (group_.rank() == 0 && !stop) {
    const int64_t one = 1;
    MPI_CHECK(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, window_));
    MPI_CHECK(MPI_Fetch_and_op(&one, &index, MPI_INT64_T, 0, 0, MPI_SUM, window_));
    MPI_CHECK(MPI_Win_unlock(0, window_));
    if (index >= run_count_) index = -1;
  }
  MPI_CHECK(MPI_Bcast(&index, 1, MPI_INT64_T, 0, group_.handle()));
  return index;
}

}  // namespace db::sweep
