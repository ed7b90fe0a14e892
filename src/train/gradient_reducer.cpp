#include "train/gradient_reducer.hpp"

#include <unistd.h>

#include <algorithm>
#include <vector>

#ifdef DEPTHBENCH_HAVE_CUDA
#include <cuda_runtime.h>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/nccl_communicator.hpp"
#endif

namespace db {
namespace {

class MpiReducer final : public GradientReducer {
 public:
  explicit MpiReducer(const Communicator& comm) : comm_(comm) {}
  void sum(Buffer<float>& grads) override {
    if (comm_.size() == 1) return;
    if (grads.on_host()) {
      comm_.allreduce_sum(std::span<float>(grads.data(), grads.size()));
      return;
    }
    staging_ = grads.to_host();  // ranks sharing a GPU: through host memory
    comm_.allreduce_sum(std::span<float>(staging_));
    grads.assign(staging_.data(), staging_.size(), MemorySpace::host);
  }
  std::string name() const override { return "mpi"; }

 private:
  const Communicator& comm_;
  std::vector<float> staging_;
};

#ifdef DEPTHBENCH_HAVE_CUDA
// NCCL's ring sums in a fixed order for a fixed rank count and message size.
class NcclReducer final : public GradientReducer {
 public:
  explicit NcclReducer(const Communicator& comm) : nccl_(comm.handle()) {}
  void sum(Buffer<float>& grads) override {
    nccl_.allreduce_sum(grads.data(), int64_t(grads.size()), nullptr);
    CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }
  std::string name() const override { return "nccl"; }

 private:
  cuda::NcclCommunicator nccl_;
};

// True when no two ranks of `comm` use the same GPU of the same host (collective).
bool every_rank_has_its_own_gpu(const Communicator& comm, int gpu) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string mine = std::string(host) + "#" + std::to_string(gpu);
  mine.resize(sizeof host + 16, '\0');
  std::vector<char> all(mine.size() * comm.size());
  MPI_Allgather(mine.data(), int(mine.size()), MPI_CHAR, all.data(), int(mine.size()), MPI_CHAR,
                comm.handle());
  std::vector<std::string> ids;
  for (int r = 0; r < comm.size(); ++r) ids.emplace_back(&all[r * mine.size()], mine.size());
  std::sort(ids.begin(), ids.end());
  return std::adjacent_find(ids.begin(), ids.end()) == ids.end();
}
#endif

}  // namespace

std::unique_ptr<GradientReducer> make_gradient_reducer(const Communicator& comm, MemorySpace space,
                                                       int gpu) {
#ifdef DEPTHBENCH_HAVE_CUDA
  if (space == MemorySpace::cuda && comm.size() > 1 && every_rank_has_its_own_gpu(comm, gpu))
    return std::make_unique<NcclReducer>(comm);
#else
  (void)space;
  (void)gpu;
#endif
  return std::make_unique<MpiReducer>(comm);
}

}  // namespace db
