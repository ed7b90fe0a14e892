#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "emulation/runtime/launch.hpp"
#include "emulation/runtime/streams.hpp"
#include "emulation/simt/fault.hpp"

namespace db::emulation {
namespace {

std::string demangled(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name, nullptr, nullptr, &status),
                                           std::free);
  return status == 0 && d ? d.get() : name;
}

// Kernels are mostly in anonymous namespaces, absent from the dynamic symbols: addr2line reads
// the full table. Run once per faulting kernel only.
std::string full_name(const void* kernel) {
  Dl_info info{};
  if (!dladdr(kernel, &info) || !info.dli_fname) return kernel_name(kernel);
  char command[4096];
  std::snprintf(command, sizeof command, "addr2line -f -C -e '%s' 0x%lx 2>/dev/null",
                info.dli_fname,
                static_cast<unsigned long>(reinterpret_cast<const char*>(kernel) -
                                           static_cast<const char*>(info.dli_fbase)));
  FILE* pipe = popen(command, "r");
  if (!pipe) return kernel_name(kernel);
  char line[4096] = {};
  const bool read = std::fgets(line, sizeof line, pipe) != nullptr;
  pclose(pipe);
  std::string name = read ? line : "";
  while (!name.empty() && (name.back() == '\n' || name.back() == '\r')) name.pop_back();
  return name.empty() || name == "??" ? kernel_name(kernel) : name;
}

}  // namespace

// DEPTHBENCH_EMULATION_STATS=1: at exit, how many distinct kernels this process ran and how many
// grids (doc/cuda.md, "The emulated device").
struct LaunchStats {
  std::map<const void*, std::string> names;
  long grids = 0;
  ~LaunchStats() {
    const char* env = std::getenv("DEPTHBENCH_EMULATION_STATS");
    if (env && *env == '1')
      std::fprintf(stderr, "emulated device: %zu distinct kernels, %ld grids run\n", names.size(),
                   grids);
  }
};

std::string kernel_name(const void* kernel) {
  static std::mutex mutex;
  static LaunchStats stats;
  std::map<const void*, std::string>& names = stats.names;
  std::lock_guard lock(mutex);
  ++stats.grids;
  auto it = names.find(kernel);
  if (it != names.end()) return it->second;
  Dl_info info{};
  std::string name;
  if (dladdr(kernel, &info) && info.dli_sname && info.dli_saddr == kernel) {
    name = demangled(info.dli_sname);
  } else {
    char text[64];
    std::snprintf(text, sizeof text, "%p", kernel);
    name = text;
  }
  return names.emplace(kernel, name).first->second;
}

void kernel_fault(const void* kernel, const std::exception& fault) {
  throw DeviceFault("kernel " + full_name(kernel) + ": " + fault.what());
}

cudaError_t record_launch_error(cudaError_t code) {
  return record_error(code);
}

}  // namespace db::emulation
