// The gradient sum over the ranks of one run, behind one small interface. Each backend makes
// its own (Backend::make_gradient_reducer): MPI for gradients in host memory; a backend with
// device memory may use a device collective (NCCL) or fall back to MPI through a host copy.
// The sum is the same on every rank and, for a fixed rank count, the same every run.
//
// Two ways to use it: sum() reduces the whole buffer at once, after the backward pass; or, when
// overlaps() (train.reduce_bucket_mb > 0, doc/backends.md "Gradient reduction"), the trainer
// starts the sum of each bucket of the buffer as soon as its gradients are final
// (start_sum), lets them advance (progress) and waits for all of them (finish_sums) before the
// optimizer step. Every rank starts the same ranges in the same order.
#pragma once
#include <cstdint>
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

  // True when ranges can be summed while the backward pass goes on.
  virtual bool overlaps() const { return false; }
  // Starts the in-place sum of grads[begin, begin + count) after the work queued so far (on a
  // GPU: the kernels that wrote those gradients). Only when overlaps().
  virtual void start_sum(Buffer<float>& /*grads*/, int64_t /*begin*/, int64_t /*count*/) {}
  // Lets started sums advance without blocking.
  virtual void progress() {}
  // Blocks until every started sum is complete. Throws like sum().
  virtual void finish_sums() {}

  // The path that runs, recorded in the run file (`gradient_reduction`): "mpi", "mpi via host
  // copy", "nccl", or "none (one rank)".
  virtual std::string name() const = 0;
};

// MPI over `comm` (which must outlive it) for gradients in `space`: each element summed in rank
// order (ops/rank_order_sum.hpp), so the result does not depend on how the buffer is cut into
// buckets. Gradients outside host memory go through a host copy, in one piece (no overlap).
std::unique_ptr<GradientReducer> make_mpi_gradient_reducer(const Communicator& comm,
                                                           MemorySpace space);

}  // namespace db
