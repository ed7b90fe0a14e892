// The gradient sum over the ranks of one run, behind one small interface. Each backend makes
// its own (Backend::make_gradient_reducer): MPI for gradients in host memory; a backend with
// device memory may use a device collective (NCCL) or fall back to MPI through a host copy.
// The sum is the same on every rank and, for a fixed rank count, the same every run.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/communicator.hpp"

namespace db {

class GradientReducer {
 public:
  virtual ~GradientReducer() = default;
  // In-place sum over the run's ranks. Throws db::Error when a peer or the transport fails.
  virtual void sum(Buffer<float>& grads) = 0;
  // The path that runs, recorded in the run file (`gradient_reduction`): "mpi", "mpi via host
  // copy", "nccl", or "none (one rank)".
  virtual std::string name() const = 0;
};

// MPI over `comm` (which must outlive it) for gradients in `space`; gradients outside host
// memory go through a host copy.
std::unique_ptr<GradientReducer> make_mpi_gradient_reducer(const Communicator& comm,
                                                           MemorySpace space);

}  // namespace db
