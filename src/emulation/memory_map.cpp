#include "emulation/memory_map.hpp"

#include <map>
#include <mutex>

#include "emulation/runtime/device_arena.hpp"

namespace db::emulation {
namespace {

std::mutex mutex;
std::map<const char*, Allocation>& allocations() {
  static std::map<const char*, Allocation> live;
  return live;
}
// The hazard checker asks from inside kernels on the one thread that runs them, far more often
// than allocations change: remember the last answer.
thread_local Allocation last_found;

}  // namespace

void register_allocation(const void* base, size_t bytes, MemoryKind kind) {
  std::lock_guard lock(mutex);
  const char* p = static_cast<const char*>(base);
  allocations()[p] = Allocation{p, bytes, kind};
  last_found = Allocation{};
}

void unregister_allocation(const void* base) {
  std::lock_guard lock(mutex);
  allocations().erase(static_cast<const char*>(base));
  last_found = Allocation{};
}

const Allocation* find_allocation(const void* p, size_t bytes) {
  const char* begin = static_cast<const char*>(p);
  if (last_found.base && begin >= last_found.base &&
      begin + bytes <= last_found.base + last_found.bytes)
    return &last_found;
  std::lock_guard lock(mutex);
  auto& live = allocations();
  auto it = live.upper_bound(begin);
  if (it == live.begin()) return nullptr;
  --it;
  const Allocation& a = it->second;
  if (begin + bytes > a.base + a.bytes) return nullptr;
  last_found = a;
  return &last_found;
}

bool in_device_arena(const void* p) {
  return device_arena_contains(p);
}

}  // namespace db::emulation
