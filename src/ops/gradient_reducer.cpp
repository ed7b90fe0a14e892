#include "ops/gradient_reducer.hpp"

#include "ops/rank_order_sum.hpp"

namespace db {
namespace {

class MpiReducer final : public GradientReducer {
 public:
  MpiReducer(const Communicator& comm, MemorySpace space)
      : comm_(comm), space_(space), sums_(comm) {}
  void sum(Buffer<float>& grads) override {
    if (comm_.size() == 1) return;
    if (grads.on_host()) {
      sums_.sum_now(grads.data(), int64_t(grads.size()));
      return;
    }
    staging_.resize(grads.size());  // allocated in the first step only
    grads.copy_to(staging_.data(), staging_.size(), MemorySpace::host);
    sums_.sum_now(staging_.data(), int64_t(staging_.size()));
    grads.assign(staging_.data(), staging_.size(), MemorySpace::host);
  }
  // Through a host copy the whole buffer travels at once: a copy per bucket would wait for
  // the device each time.
  bool overlaps() const override { return comm_.size() > 1 && space_.is_host(); }
  void start_sum(Buffer<float>& grads, int64_t begin, int64_t count) override {
    sums_.start(grads.data() + begin, count);
  }
  void progress() override { sums_.progress(); }
  void finish_sums() override { sums_.finish(); }
  std::string name() const override {
    if (comm_.size() == 1) return "none (one rank)";
    return space_.is_host() ? "mpi" : "mpi via host copy";
  }

 private:
  const Communicator& comm_;
  MemorySpace space_;
  RankOrderSum sums_;
  std::vector<float> staging_;
};

}  // namespace

std::unique_ptr<GradientReducer> make_mpi_gradient_reducer(const Communicator& comm,
                                                           MemorySpace space) {
  return std::make_unique<MpiReducer>(comm, space);
}

}  // namespace db
