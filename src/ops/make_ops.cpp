#include "ops/make_ops.hpp"

#include <type_traits>

#include "core/error.hpp"
#include "ops/cpu/cpu_ops.hpp"

namespace db {

template <class T>
std::unique_ptr<Ops<T>> make_ops(Backend backend, Precision precision) {
  if (backend == Backend::cpu) return make_cpu_ops<T>();
  if constexpr (std::is_same_v<T, float>) {
    if (!cuda_compiled_in()) throw Error("this build has no CUDA backend (built without nvcc)");
    (void)precision;
    throw Error("the model code does not run on the CUDA backend yet");
  }
  throw Error("the CUDA backend computes in float only (double is for CPU gradient checks)");
}

template std::unique_ptr<Ops<float>> make_ops<float>(Backend, Precision);
template std::unique_ptr<Ops<double>> make_ops<double>(Backend, Precision);

}  // namespace db
