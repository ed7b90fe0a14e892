// The CUDA backend: the current GPU's memory (one stream-ordered pool, cuda_memory.hpp), the
// CUDA ops in float (fp32 or bf16 products), AdamW and the gradient norm on the device, NCCL
// gradient sums when every rank of a run has its own GPU. Available when a GPU is visible;
// "auto" prefers it to the CPU.
#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "ops/backend.hpp"
#include "ops/cuda/adamw.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "ops/cuda/cuda_ops.hpp"
#include "ops/cuda/cudnn_attention.hpp"
#include "ops/cuda/device.hpp"
#include "ops/cuda/event_timer.hpp"
#include "ops/cuda/nccl_communicator.hpp"
#include "ops/cuda/op_stream.hpp"

namespace db {
namespace {

// Longest wait for one step's queued work and its all-reduce before NCCL is declared stuck.
constexpr double kNcclTimeoutSeconds = 900;

// NCCL in fp32. Bucketed sums run on a stream of their own, each ordered after the kernels
// queued so far on the compute stream (current_stream(): the legacy default stream, or the
// capture stream while a micro-batch is captured) by an event, so the
// all-reduce of the last blocks' gradients runs while the backward of the earlier blocks goes
// on. The gradient buffer is never freed during a step, so the pool's stream-ordered reuse
// (doc/cuda.md) needs no further joins; finish_sums makes the compute stream wait for the
// reduction stream before the optimizer reads the sums.
class NcclReducer final : public GradientReducer {
 public:
  explicit NcclReducer(const Communicator& run) : nccl_(run.handle()) {
    // Non-blocking: a stream created plainly would synchronise with the legacy default stream
    // at every launch, and nothing would overlap.
    CUDA_CHECK(cudaStreamCreateWithFlags(&reduce_stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&gradients_written_, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&sums_done_, cudaEventDisableTiming));
  }
  ~NcclReducer() override {
    cudaEventDestroy(sums_done_);  // never throws from a destructor
    cudaEventDestroy(gradients_written_);
    cudaStreamDestroy(reduce_stream_);
  }
  void sum(Buffer<float>& grads) override {
    nccl_.allreduce_sum(grads.data(), int64_t(grads.size()), nullptr);
    nccl_.wait(nullptr, kNcclTimeoutSeconds);
  }
  bool overlaps() const override { return true; }
  void start_sum(Buffer<float>& grads, int64_t begin, int64_t count) override {
    // cudaStreamWaitEvent orders after the record as of this call: one event serves every bucket.
    CUDA_CHECK(cudaEventRecord(gradients_written_, cuda::current_stream()));
    CUDA_CHECK(cudaStreamWaitEvent(reduce_stream_, gradients_written_, 0));
    nccl_.allreduce_sum(grads.data() + begin, count, reduce_stream_);
  }
  void finish_sums() override {
    nccl_.wait(reduce_stream_, kNcclTimeoutSeconds);
    CUDA_CHECK(cudaEventRecord(sums_done_, reduce_stream_));
    CUDA_CHECK(cudaStreamWaitEvent(cuda::current_stream(), sums_done_, 0));
  }
  std::string name() const override { return "nccl"; }

 private:
  cuda::NcclCommunicator nccl_;
  cudaStream_t reduce_stream_ = nullptr;
  cudaEvent_t gradients_written_ = nullptr, sums_done_ = nullptr;
};

// True when no two ranks of `run` use the same physical GPU (collective over `run`). Device
// UUIDs, not host name + ordinal: under CUDA_VISIBLE_DEVICES per rank (Slurm --gpus-per-task)
// every rank calls its GPU device 0.
bool every_rank_has_its_own_gpu(const Communicator& run, int device) {
  const std::string mine = cuda::device_uuid(device);
  std::vector<char> all(mine.size() * run.size());
  MPI_CHECK(MPI_Allgather(mine.data(), int(mine.size()), MPI_CHAR, all.data(), int(mine.size()),
                          MPI_CHAR, run.handle()));
  std::vector<std::string> ids;
  for (int r = 0; r < run.size(); ++r) ids.emplace_back(&all[r * mine.size()], mine.size());
  std::sort(ids.begin(), ids.end());
  return std::adjacent_find(ids.begin(), ids.end()) == ids.end();
}

int current_device() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

class CudaBackend final : public Backend {
 public:
  const char* name() const override { return "cuda"; }
  std::string unavailable_reason() const override {
    return cuda::cuda_available() ? "" : "no GPU visible";
  }
  int auto_preference() const override { return 10; }
  bool has_fast_paths() const override { return true; }
  std::string device_name() const override { return cuda::device_name(current_device()); }
  std::vector<std::pair<std::string, std::string>> properties() const override {
    // cudnn: which library train.attention = cudnn | auto would use, or why none.
    return {{"device_index", std::to_string(current_device())},
            {"cudnn", cuda::cudnn_description()}};
  }

  // Collective over the job even where this rank sees no GPU, so that no rank waits alone.
  void start(const Communicator& job) override {
    const int local_rank = cuda::node_local_rank(job.handle());
    const int count = cuda::device_count();
    if (count == 0) return;
    CUDA_CHECK(cudaSetDevice(local_rank % count));
    cuda::configure_memory_pool(local_rank % count);
  }
  // The host loops around a GPU run (data, diagnostics' statistics) are the CPU backend's.
  void set_host_threads(int threads) override { find_backend("cpu").set_host_threads(threads); }
  int host_threads() const override { return find_backend("cpu").host_threads(); }

  MemorySpace space() const override { return cuda::cuda_memory_space(); }
  void release_cached_memory() override {
    if (available()) cuda::release_cached_memory();
  }
  size_t memory_used_bytes() const override { return cuda::device_memory_used(); }
  size_t memory_total_bytes() const override { return cuda::device_memory_total(); }
  // The stream-ordered pool's mark: every buffer of the model and every kernel's scratch.
  size_t memory_peak_bytes() const override { return cuda::peak_memory_bytes(); }
  void reset_memory_peak() override { cuda::reset_peak_memory(); }
  void synchronize() const override { CUDA_CHECK(cudaDeviceSynchronize()); }
  MemorySpace staging_space() const override { return cuda::pinned_host_space(); }
  std::unique_ptr<SectionTimer> make_section_timer() const override {
    return cuda::make_event_section_timer();
  }

  std::unique_ptr<Ops<float>> make_float_ops(const OpsOptions& options) const override {
    if (!available()) throw Error("the CUDA backend needs a visible GPU; none is");
    cuda::configure_memory_pool(current_device());
    return cuda::make_cuda_ops(options);
  }

  void adamw_update(float* values, const float* grads, float* m, float* v, const uint8_t* decay,
                    int64_t count, const AdamWUpdate& u, bfloat16* values_bf16) const override {
    cuda::AdamWStep step;
    step.lr = u.lr;
    step.beta1 = u.beta1;
    step.beta2 = u.beta2;
    step.eps = u.eps;
    step.weight_decay = u.weight_decay;
    step.step = u.step;
    step.clip_scale = u.clip_scale;
    // bfloat16 has __nv_bfloat16's layout (core/bfloat16.hpp).
    cuda::adamw_step(values, grads, m, v, decay, count, step,
                     reinterpret_cast<cuda::bf16*>(values_bf16));
  }
  double sum_of_squares(const float* x, int64_t count) const override {
    const double norm = cuda::global_norm(x, count);
    return norm * norm;
  }

  std::unique_ptr<GradientReducer> make_gradient_reducer(const Communicator& run) const override {
    if (run.size() > 1 && every_rank_has_its_own_gpu(run, current_device()))
      return std::make_unique<NcclReducer>(run);
    return make_mpi_gradient_reducer(run, space());  // ranks sharing a GPU: NCCL cannot serve
  }
};

}  // namespace

// The registration entry point (src/CMakeLists.txt lists it in DEPTHBENCH_BACKENDS).
Backend& cuda_backend() {
  static CudaBackend backend;
  return backend;
}

}  // namespace db
