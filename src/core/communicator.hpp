// An MPI communicator owned by value (RAII frees split communicators) with the few
// collectives training needs. Gradients are summed in place; the CUDA issue adds NCCL behind
// the same calls.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace db {

class Communicator {
 public:
  // Wraps MPI_COMM_WORLD (not freed).
  static Communicator world();
  // MPI_Comm_split of `parent` by colour; the result is freed on destruction.
  static Communicator split(const Communicator& parent, int color, int key);
  // A communicator of this rank alone (MPI_COMM_SELF, not freed).
  static Communicator self();

  Communicator(Communicator&& other) noexcept;
  Communicator& operator=(Communicator&&) = delete;
  Communicator(const Communicator&) = delete;
  ~Communicator();

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm handle() const { return comm_; }

  void allreduce_sum(std::span<float> values) const;
  void allreduce_sum(std::span<double> values) const;
  double allreduce_sum(double value) const;
  double allreduce_max(double value) const;
  void broadcast(std::string& text, int root) const;
  void barrier() const;

  // CPU threads for each rank: this node's cores divided among this communicator's ranks on
  // the node (collective).
  int threads_per_rank_on_node() const;

 private:
  Communicator(MPI_Comm comm, bool owned);
  MPI_Comm comm_;
  bool owned_;
  int rank_ = 0, size_ = 1;
};

}  // namespace db
