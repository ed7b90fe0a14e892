// A kernel launch on the emulated device (what `kernel<<<grid, block, shared, stream>>>(args)`
// does): the launch is checked at once, as CUDA checks it, the arguments are copied into the
// launch as the kernel's parameter types, and the grid runs in stream order (runtime/streams).
#pragma once
#include <cuda_runtime.h>

#include <exception>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "emulation/runtime/emulated_device.hpp"
#include "emulation/runtime/stream_work.hpp"
#include "emulation/simt/grid.hpp"

namespace db::emulation {

// The kernel's name: cheap ("<file>+0x<offset>" unless the dynamic symbols name it), and
// resolved through the full symbol table when a fault is reported (kernel_fault).
std::string kernel_name(const void* kernel);
[[noreturn]] void kernel_fault(const void* kernel, const std::exception& fault);
cudaError_t record_launch_error(cudaError_t code);

template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes,
                   cudaStream_t stream, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args), "a kernel launch with the wrong arguments");
  LaunchShape shape;
  shape.grid = grid;
  shape.block = block;
  shape.dynamic_shared_bytes = shared_bytes;
  shape.max_dynamic_shared_bytes = max_dynamic_shared(reinterpret_cast<const void*>(kernel));
  shape.kernel_name = "kernel";
  if (cudaError_t e = check_launch(shape)) {
    record_launch_error(e);
    return;
  }
  std::tuple<std::decay_t<Params>...> parameters(std::forward<Args>(args)...);
  const cudaError_t e = enqueue(stream, "kernel", [kernel, shape, parameters]() mutable {
    const std::string name = kernel_name(reinterpret_cast<const void*>(kernel));
    shape.kernel_name = name.c_str();
    try {
      run_grid(shape, [&] { std::apply(kernel, parameters); });
    } catch (const std::exception& fault) {
      kernel_fault(reinterpret_cast<const void*>(kernel), fault);
    }
  });
  record_launch_error(e);
}

}  // namespace db::emulation
