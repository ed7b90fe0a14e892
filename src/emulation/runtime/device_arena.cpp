#include "emulation/runtime/device_arena.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>

namespace db::emulation {
namespace {

// 4 TiB of address space, reserved without memory behind it: pages are committed on first touch.
constexpr size_t kReserved = size_t(4) << 40;

struct Arena {
  char* base = nullptr;
  size_t used = 0;
  size_t page = 4096;
  std::mutex mutex;
  Arena() {
    page = size_t(sysconf(_SC_PAGESIZE));
    void* p =
        mmap(nullptr, kReserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<char*>(p);
  }
};

Arena& arena() {
  static Arena a;
  return a;
}

// The reserved range, for device_arena_contains: asked on every checked access of a kernel, so
// kept in plain variables (set once, before the first device pointer exists).
const char* reserved_begin = nullptr;
const char* reserved_end = nullptr;

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

void* device_arena_allocate(size_t bytes) {
  Arena& a = arena();
  if (!a.base) return nullptr;
  reserved_begin = a.base, reserved_end = a.base + kReserved;
  std::lock_guard lock(a.mutex);
  const size_t span = round_up(bytes ? bytes : 1, a.page);
  if (a.used + span + a.page > kReserved) return nullptr;
  char* p = a.base + a.used;
  if (mprotect(p, span, PROT_READ | PROT_WRITE) != 0) return nullptr;
  a.used += span + a.page;  // the page after stays PROT_NONE: the guard
  return p;
}

void device_arena_release(void* p, size_t bytes) {
  Arena& a = arena();
  const size_t span = round_up(bytes ? bytes : 1, a.page);
  // Give the memory back to the system and make the range inaccessible for good.
  mmap(p, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
}

bool device_arena_contains(const void* p) {
  const char* c = static_cast<const char*>(p);
  return c >= reserved_begin && c < reserved_end;
}

}  // namespace db::emulation
