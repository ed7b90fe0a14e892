// The gradient sum over the ranks of one run, behind one small interface: MPI for gradients in
// host memory (the CPU backend); NCCL for gradients on GPUs when every rank of the run has its
// own GPU; otherwise MPI through a host copy (several ranks sharing one GPU, which NCCL cannot
// serve). The sum is the same on every rank and, for a fixed rank count, the same every run.
#pragma once
#include <memory>
#include <string>

#include "core/buffer.hpp"
#include "core/communicator.hpp"

namespace db {

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  // In-place sum over the run's ranks.
  virtual void sum(Buffer<float>& grads) = 0;
  virtual std::string name() const = 0;
};

// Collective over `comm`. `space`: where the gradients live; `gpu`: this rank's GPU index
// (ignored on the host).
std::unique_ptr<GradientReducer> make_gradient_reducer(const Communicator& comm, MemorySpace space,
                                                       int gpu);

}  // namespace db
