#include "ops/make_ops.hpp"

#include <type_traits>

#include "core/error.hpp"
#include "ops/cpu/cpu_ops.hpp"

#ifdef DEPTHBENCH_HAVE_CUDA
#include "ops/cuda/cuda_ops.hpp"
#include "ops/cuda/device.hpp"
#endif

namespace db {

template <class T>
std::unique_ptr<Ops<T>> make_ops(Backend backend, Precision precision) {
  if (backend == Backend::cpu) return make_cpu_ops<T>();
  if constexpr (std::is_same_v<T, float>) {
#ifdef DEPTHBENCH_HAVE_CUDA
    if (!cuda::cuda_available()) throw Error("the CUDA backend needs a visible GPU; none is");
    return cuda::make_cuda_ops(precision);
#else
    (void)precision;
    throw Error("this build has no CUDA backend (built without nvcc)");
#endif
  }
  throw Error("the CUDA backend computes in float only (double is for CPU gradient checks)");
}

template std::unique_ptr<Ops<float>> make_ops<float>(Backend, Precision);
template std::unique_ptr<Ops<double>> make_ops<double>(Backend, Precision);

}  // namespace db
