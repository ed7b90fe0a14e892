#include "core/memory.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <vector>

#include "core/memory_poison.hpp"

namespace db {
namespace {

std::atomic<bool> poison_new_host_memory{false};  // core/memory_poison.hpp

class HostMemory final : public MemoryResource {
 public:
  const char* name() const override { return "host"; }
  bool is_host() const override { return true; }
  void* allocate(size_t bytes) override {
    // 64-byte alignment: whole cache lines for the OpenMP loops, as std::vector gives for SIMD.
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    if (poison_new_host_memory.load(std::memory_order_relaxed)) std::memset(p, 0xFF, bytes);
    const size_t now = in_use += bytes;
    for (size_t peak = peak_in_use; now > peak && !peak_in_use.compare_exchange_weak(peak, now);) {
    }
    return p;
  }
  void release(void* data, size_t bytes) noexcept override {
    std::free(data);
    in_use -= bytes;
  }
  std::atomic<size_t> in_use{0}, peak_in_use{0};  // bytes of the buffers allocated here
  void copy(void* dst, const void* src, size_t bytes) override { std::memmove(dst, src, bytes); }
  void zero(void* data, size_t bytes) override { std::memset(data, 0, bytes); }
};

// Constant-initialised: usable from any static initialiser or destructor.
HostMemory host_memory;
thread_local MemorySpace current_space{&host_memory};

}  // namespace

const MemorySpace MemorySpace::host{&host_memory};

namespace memory {

void* allocate(MemorySpace space, size_t bytes) {
  return bytes == 0 ? nullptr : space.resource().allocate(bytes);
}

void release(MemorySpace space, void* data, size_t bytes) noexcept {
  if (data) space.resource().release(data, bytes);
}

void copy(void* dst, MemorySpace dst_space, const void* src, MemorySpace src_space, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (dst_space == src_space || src_space.is_host())
    return dst_space.resource().copy(dst, src, bytes);
  if (dst_space.is_host()) return src_space.resource().copy(dst, src, bytes);
  std::vector<char> staging(bytes);  // two different device spaces
  src_space.resource().copy(staging.data(), src, bytes);
  dst_space.resource().copy(dst, staging.data(), bytes);
}

void zero(MemorySpace space, void* data, size_t bytes) {
  if (bytes > 0) space.resource().zero(data, bytes);
}

void set_poison_new_host_memory(bool on) {
  poison_new_host_memory = on;
}

size_t host_bytes_in_use() {
  return host_memory.in_use;
}
size_t host_peak_bytes() {
  return host_memory.peak_in_use;
}
void reset_host_peak() {
  host_memory.peak_in_use = size_t(host_memory.in_use);
}

}  // namespace memory

MemorySpace current_memory_space() {
  return current_space;
}

MemorySpaceScope::MemorySpaceScope(MemorySpace space) : previous_(current_space) {
  current_space = space;
}
MemorySpaceScope::~MemorySpaceScope() {
  current_space = previous_;
}

}  // namespace db
