// A compute backend as one object, like an execution space in Kokkos: its name, its memory
// space (allocation, copies), its ops, the optimizer's element-wise work, the gradient
// reducer, device selection and memory statistics. Each backend's folder (ops/cpu, ops/cuda)
// defines one and is listed once in CMake (DEPTHBENCH_BACKENDS), which generates the
// registration list (see registered_backends). Code above ops/ reaches a backend only
// through this interface: it never names ops/cpu, ops/cuda or a build flag.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/communicator.hpp"
#include "core/memory.hpp"
#include "ops/gradient_reducer.hpp"
#include "ops/ops.hpp"
#include "ops/ops_options.hpp"
#include "ops/section_timer.hpp"

namespace db {

struct AdamWUpdate {
  double lr, beta1, beta2, eps, weight_decay;
  int64_t step;       // 1-based: bias corrections 1 − βᵗ
  double clip_scale;  // gradients are multiplied by it first (≤ 1)
};

class Backend {
 public:
  virtual ~Backend() = default;

  // --- identity -------------------------------------------------------------------------------
  virtual const char* name() const = 0;
  // "" when the backend can compute in this process, else why not, in a few words ("no GPU").
  virtual std::string unavailable_reason() const = 0;
  bool available() const { return unavailable_reason().empty(); }
  // "auto" takes the available backend with the highest preference.
  virtual int auto_preference() const = 0;
  // What a run file records about it (`device_name` and backend-specific attributes).
  virtual std::string device_name() const = 0;
  virtual std::vector<std::pair<std::string, std::string>> properties() const = 0;
  // Whether its ops have fast paths beside the reference ones (attention kernels, bf16 storage,
  // fused kernels, graph replay) that a run checks before its first step
  // (train/path_validation.hpp); the CPU's ops are the reference.
  virtual bool has_fast_paths() const { return false; }

  // --- start-up -------------------------------------------------------------------------------
  // First thing in main(), before MPI starts; may re-execute the program (the CPU backend picks
  // OpenBLAS kernels through an environment variable read when the library loads).
  virtual void prepare_process(char** argv) { (void)argv; }
  // Once per process, collectively over every rank of the job, before the job is split into
  // runs (start_backends). The GPU backend picks this rank's device here: nothing inside a run
  // is collective over the whole job (a sweep's groups run different runs).
  virtual void start(const Communicator& job) = 0;
  // Threads of the host loops this backend runs (the CPU's OpenMP and BLAS).
  virtual void set_host_threads(int threads) = 0;
  virtual int host_threads() const = 0;

  // --- memory ---------------------------------------------------------------------------------
  virtual MemorySpace space() const = 0;
  // Gives cached blocks back to the device (at the end of a run, so the next one starts empty).
  virtual void release_cached_memory() = 0;
  // In use by this process's device and its capacity (the host's: 0 and the machine's memory).
  virtual size_t memory_used_bytes() const = 0;
  virtual size_t memory_total_bytes() const = 0;
  // High-water mark of memory_used_bytes since the last reset_memory_peak (the host's: the
  // process's peak resident set, which cannot be reset).
  virtual size_t memory_peak_bytes() const { return memory_used_bytes(); }
  virtual void reset_memory_peak() {}
  // Waits for the work queued on the device (nothing on the host).
  virtual void synchronize() const {}
  // Host memory this backend copies from fastest (page-locked on a GPU: the copy is one DMA,
  // not a staged one), for token batches; plain host memory where that makes no difference.
  // Its buffers are host memory to every reader (is_host()).
  virtual MemorySpace staging_space() const { return MemorySpace::host; }

  // --- computation ----------------------------------------------------------------------------
  // db::Error when the combination cannot run (the base versions: double is not supported).
  // A backend ignores the options it has no use for (the CPU: all of them).
  virtual std::unique_ptr<Ops<float>> make_float_ops(const OpsOptions& options) const = 0;
  virtual std::unique_ptr<Ops<double>> make_double_ops() const;

  // torch.optim.AdamW on arrays in space(): decoupled decay (where decay[i]) first, then the
  // Adam update; m and v are fp32 state. values_bf16, when not null, receives each updated
  // value rounded to bf16 (core/bfloat16.hpp's rounding, CUDA's) in the same pass: the weight
  // copy that bf16 storage reads (model/parameters.hpp).
  virtual void adamw_update(float* values, const float* grads, float* m, float* v,
                            const uint8_t* decay, int64_t count, const AdamWUpdate& u,
                            bfloat16* values_bf16) const = 0;
  virtual void adamw_update(double* values, const double* grads, float* m, float* v,
                            const uint8_t* decay, int64_t count, const AdamWUpdate& u,
                            bfloat16* values_bf16) const;
  // Σ x² in double, in an order that does not depend on thread or block counts.
  virtual double sum_of_squares(const float* x, int64_t count) const = 0;
  virtual double sum_of_squares(const double* x, int64_t count) const;

  // Collective over the run's communicator `run` (which must outlive the reducer).
  virtual std::unique_ptr<GradientReducer> make_gradient_reducer(const Communicator& run) const = 0;

  // --- timing (depthbench bench --breakdown) --------------------------------------------------
  // A timer of this backend's work (ops/section_timer.hpp): the host clock unless overridden.
  virtual std::unique_ptr<SectionTimer> make_section_timer() const;
  // While a timer is attached, make_ops wraps the ops it makes so that every op call is timed in
  // it (ops/timed_ops.hpp); nullptr detaches. Ops made before keep their timing.
  void attach_section_timer(SectionTimer* timer) { section_timer_ = timer; }
  SectionTimer* section_timer() const { return section_timer_; }

 protected:
  [[noreturn]] void no_double() const;

 private:
  SectionTimer* section_timer_ = nullptr;
};

// Every backend compiled into this program, in DEPTHBENCH_BACKENDS order (the CPU first).
const std::vector<Backend*>& registered_backends();
std::string backend_names();    // "cpu, cuda"
std::string backend_choices();  // "auto | cpu | cuda", for help texts
// db::Error for a name that no registered backend has.
Backend& find_backend(const std::string& name);
// The backend owning a memory space; host_backend() owns host memory and runs the host loops
// of every command (diagnostic statistics, evaluation), whatever backend runs the model.
Backend& backend_of(MemorySpace space);
inline Backend& host_backend() {
  return backend_of(MemorySpace::host);
}
// requested: "auto" (the available backend of highest preference; a line on stdout when that
// is not the most preferred registered one) or a name (db::Error when it cannot run here).
Backend& choose_backend(const std::string& requested);
// Backend::prepare_process of every registered backend.
void prepare_backends(char** argv);
// Backend::start of every registered backend: call once at start-up on every rank of the job.
void start_backends(const Communicator& job);

// The ops of a backend in T (float: training; double: CPU gradient checks).
template <class T>
std::unique_ptr<Ops<T>> make_ops(const Backend& backend, const OpsOptions& options = {});

}  // namespace db
