// The CPU backend: host memory, the OpenBLAS/OpenMP ops in float and double, the host AdamW,
// MPI gradient sums. Always available; "auto" prefers any available device backend to it.
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>

#include "ops/backend.hpp"
#include "ops/cpu/cpu_ops.hpp"
#include "ops/cpu/gemm.hpp"
#include "ops/cpu/optimizer.hpp"

namespace db {
namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }
  std::string unavailable_reason() const override { return ""; }
  int auto_preference() const override { return 0; }
  std::string device_name() const override { return cpu_model_name(); }
  std::vector<std::pair<std::string, std::string>> properties() const override {
    return {{"blas_core", cpu::blas_core_name()}};
  }

  void prepare_process(char** argv) override { cpu::select_blas_kernels(argv); }
  void start(const Communicator&) override {}
  void set_host_threads(int threads) override { cpu::set_cpu_threads(threads); }
  int host_threads() const override { return cpu::cpu_threads(); }

  MemorySpace space() const override { return MemorySpace::host; }
  void release_cached_memory() override {}
  size_t memory_used_bytes() const override { return 0; }
  size_t memory_peak_bytes() const override {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return size_t(usage.ru_maxrss) * 1024;  // Linux: KiB
  }
  size_t memory_total_bytes() const override {
    return size_t(sysconf(_SC_PHYS_PAGES)) * size_t(sysconf(_SC_PAGE_SIZE));
  }

  // fp32 whatever train.precision says, and its one attention whatever train.attention says.
  std::unique_ptr<Ops<float>> make_float_ops(const OpsOptions&) const override {
    return make_cpu_ops<float>();
  }
  std::unique_ptr<Ops<double>> make_double_ops() const override { return make_cpu_ops<double>(); }

  void adamw_update(float* values, const float* grads, float* m, float* v, const uint8_t* decay,
                    int64_t count, const AdamWUpdate& u, bfloat16* values_bf16) const override {
    cpu::adamw_update(values, grads, m, v, decay, count, u, values_bf16);
  }
  void adamw_update(double* values, const double* grads, float* m, float* v, const uint8_t* decay,
                    int64_t count, const AdamWUpdate& u, bfloat16* values_bf16) const override {
    cpu::adamw_update(values, grads, m, v, decay, count, u, values_bf16);
  }
  double sum_of_squares(const float* x, int64_t count) const override {
    return cpu::sum_of_squares(x, count);
  }
  double sum_of_squares(const double* x, int64_t count) const override {
    return cpu::sum_of_squares(x, count);
  }

  std::unique_ptr<GradientReducer> make_gradient_reducer(const Communicator& run) const override {
    return make_mpi_gradient_reducer(run, space());
  }
};

}  // namespace

// The registration entry point (src/CMakeLists.txt lists it in DEPTHBENCH_BACKENDS).
Backend& cpu_backend() {
  static CpuBackend backend;
  return backend;
}

}  // namespace db
