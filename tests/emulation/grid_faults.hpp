// Shared by the emulated device's own tests: the fault a grid raises, as text.
#pragma once
#include <functional>
#include <string>

#include "emulation/simt/fault.hpp"
#include "emulation/simt/grid.hpp"

namespace db::test {

// A grid of `block`-sized blocks of the kernel `name`, with that much dynamic shared memory.
inline emulation::LaunchShape launch_shape(dim3 grid, dim3 block, const char* name = "test",
                                           size_t dynamic_bytes = 0) {
  emulation::LaunchShape s;
  s.grid = grid;
  s.block = block;
  s.dynamic_shared_bytes = dynamic_bytes;
  s.kernel_name = name;
  return s;
}

// The message of the DeviceFault that running `body` on grid `s` throws ("" when it runs clean).
inline std::string fault_of(const emulation::LaunchShape& s, const std::function<void()>& body) {
  try {
    emulation::run_grid(s, body);
  } catch (const emulation::DeviceFault& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace db::test
