#include "ops/gradient_reducer.hpp"

namespace db {
namespace {

class MpiReducer final : public GradientReducer {
 public:
  MpiReducer(const Communicator& comm, MemorySpace space) : comm_(comm), space_(space) {}
  void sum(Buffer<float>& grads) override {
    if (comm_.size() == 1) return;
    if (grads.on_host()) {
      comm_.allreduce_sum(std::span<float>(grads.data(), grads.size()));
      return;
    }
    staging_.resize(grads.size());  // allocated in the first step only
    grads.copy_to(staging_.data(), staging_.size(), MemorySpace::host);
    comm_.allreduce_sum(std::span<float>(staging_));
    grads.assign(staging_.data(), staging_.size(), MemorySpace::host);
  }
  std::string name() const override {
    if (comm_.size() == 1) return "none (one rank)";
    return space_.is_host() ? "mpi" : "mpi via host copy";
  }

 private:
  const Communicator& comm_;
  MemorySpace space_;
  std::vector<float> staging_;
};

}  // namespace

std::unique_ptr<GradientReducer> make_mpi_gradient_reducer(const Communicator& comm,
                                                           MemorySpace space) {
  return std::make_unique<MpiReducer>(comm, space);
}

}  // namespace db
