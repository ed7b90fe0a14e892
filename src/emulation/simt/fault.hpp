// A fault of emulated device work (a hazard, an out-of-bounds access, a barrier not reached by
// every thread, an unsupported launch): the runtime turns it into the error CUDA would return.
#pragma once
#include <stdexcept>
#include <string>

namespace db::emulation {

struct DeviceFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace db::emulation
