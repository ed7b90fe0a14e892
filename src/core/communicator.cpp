#include "core/communicator.hpp"

#include <algorithm>
#include <thread>

#include "core/error.hpp"

namespace db {

Communicator::Communicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

Communicator Communicator::world() {
  return Communicator(MPI_COMM_WORLD, false);
}
Communicator Communicator::self() {
  return Communicator(MPI_COMM_SELF, false);
}

Communicator Communicator::split(const Communicator& parent, int color, int key) {
  MPI_Comm comm;
  MPI_CHECK(MPI_Comm_split(parent.comm_, color, key, &comm));
  return Communicator(comm, true);
}

Communicator::Communicator(Communicator&& other) noexcept
    : comm_(other.comm_), owned_(other.owned_), rank_(other.rank_), size_(other.size_) {
  other.owned_ = false;
}

Communicator::~Communicator() {
  if (owned_) MPI_Comm_free(&comm_);
}

void Communicator::allreduce_sum(std::span<float> values) const {
  if (size_ == 1) return;
  // MPI counts are int: reduce in slices of at most 2^30 elements.
  for (size_t begin = 0; begin < values.size(); begin += size_t(1) << 30) {
    const int count = int(std::min(values.size() - begin, size_t(1) << 30));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data() + begin, count, MPI_FLOAT, MPI_SUM, comm_));
  }
}

void Communicator::allreduce_sum(std::span<double> values) const {
  if (size_ == 1) return;
  for (size_t begin = 0; begin < values.size(); begin += size_t(1) << 30) {
    const int count = int(std::min(values.size() - begin, size_t(1) << 30));
    MPI_CHECK(
        MPI_Allreduce(MPI_IN_PLACE, values.data() + begin, count, MPI_DOUBLE, MPI_SUM, comm_));
  }
}

double Communicator::allreduce_sum(double value) const {
  if (size_ > 1) MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_SUM, comm_));
  return value;
}

double Communicator::allreduce_max(double value) const {
  if (size_ > 1) MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, comm_));
  return value;
}

void Communicator::broadcast(std::string& text, int root) const {
  if (size_ == 1) return;
  int length = int(text.size());
  MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT, root, comm_));
  text.resize(length);
  MPI_CHECK(MPI_Bcast(text.data(), length, MPI_CHAR, root, comm_));
}

void Communicator::barrier() const {
  MPI_CHECK(MPI_Barrier(comm_));
}

int Communicator::threads_per_rank_on_node() const {
  MPI_Comm local;
  MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  int local_size = 1;
  MPI_Comm_size(local, &local_size);
  MPI_Comm_free(&local);
  const int cores = int(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / local_size);
}

}  // namespace db
