#include "emulation/memory_map.hpp"

#include <atomic>
#include <cstdint>
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
// The hazard checker asks from inside kernels, far more often than allocations change, about the
// few buffers a kernel reads and writes: each thread keeps its last answers, valid while the
// generation (bumped by every change) is the one they were found in.
std::atomic<uint64_t> generation{1};
constexpr int kRemembered = 8;
struct Remembered {
  Allocation found[kRemembered];
  int next = 0;
  uint64_t generation = 0;
};
thread_local Remembered remembered;

}  // namespace

void register_allocation(const void* base, size_t bytes, MemoryKind kind) {
  std::lock_guard lock(mutex);
  const char* p = static_cast<const char*>(base);
  allocations()[p] = Allocation{p, bytes, kind};
  ++generation;
}

void unregister_allocation(const void* base) {
  std::lock_guard lock(mutex);
  allocations().erase(static_cast<const char*>(base));
  ++generation;
}

const Allocation* find_allocation(const void* p, size_t bytes) {
  const char* begin = static_cast<const char*>(p);
  Remembered& r = remembered;
  if (r.generation == generation.load(std::memory_order_acquire)) {
    for (const Allocation& a : r.found)
      if (a.base && begin >= a.base && begin + bytes <= a.base + a.bytes) return &a;
  } else {
    r = Remembered{};
    r.generation = generation.load(std::memory_order_acquire);
  }
  std::lock_guard lock(mutex);
  auto& live = allocations();
  auto it = live.upper_bound(begin);
  if (it == live.begin()) return nullptr;
  --it;
  const Allocation& a = it->second;
  if (begin + bytes > a.base + a.bytes) return nullptr;
  Allocation& slot = r.found[r.next];
  r.next = (r.next + 1) % kRemembered;
  slot = a;
  return &slot;
}

bool in_device_arena(const void* p) {
  return device_arena_contains(p);
}

}  // namespace db::emulation
