#include "core/memory.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <unordered_map>

#include "core/error.hpp"

#ifdef DEPTHBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace db {
namespace {
thread_local MemorySpace current_space = MemorySpace::host;

#ifdef DEPTHBENCH_HAVE_CUDA
void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw Error(std::string(what) + " failed: " + cudaGetErrorString(status));
}

// GPU blocks released by buffers, kept by exact size for the next allocation of that size: the
// model sizes the same buffers every step, and cudaFree would synchronise the device each
// time. Emptied (really freed) when cudaMalloc runs out of memory.
class GpuBlockCache {
 public:
  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it == free_.end()) return nullptr;
    void* p = it->second;
    free_.erase(it);
    return p;
  }
  void give(size_t bytes, void* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.emplace(bytes, p);
  }
  void release_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [bytes, p] : free_) cudaFree(p);
    free_.clear();
  }

 private:
  std::mutex mutex_;
  std::unordered_multimap<size_t, void*> free_;
};

GpuBlockCache& gpu_cache() {
  static GpuBlockCache* cache = new GpuBlockCache;  // never destroyed: outlives every buffer
  return *cache;
}
#else
[[noreturn]] void no_cuda() {
  throw Error("GPU memory requested, but this build has no CUDA backend");
}
#endif
}  // namespace

namespace memory {

void* allocate(MemorySpace space, size_t bytes) {
  if (bytes == 0) return nullptr;
  if (space == MemorySpace::host) {
    // 64-byte alignment: whole cache lines for the OpenMP loops, as std::vector gives for SIMD.
    void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!p) throw std::bad_alloc();
    return p;
  }
#ifdef DEPTHBENCH_HAVE_CUDA
  if (void* cached = gpu_cache().take(bytes)) return cached;
  void* p = nullptr;
  if (cudaMalloc(&p, bytes) != cudaSuccess) {
    cudaGetLastError();  // clear the out-of-memory error, return the cached blocks, retry
    gpu_cache().release_all();
    check(cudaMalloc(&p, bytes), "cudaMalloc");
  }
  return p;
#else
  no_cuda();
#endif
}

void release(MemorySpace space, void* data, size_t bytes) noexcept {
  if (!data) return;
  if (space == MemorySpace::host) {
    std::free(data);
    return;
  }
#ifdef DEPTHBENCH_HAVE_CUDA
  try {
    gpu_cache().give(bytes, data);
  } catch (...) {  // never throws from a destructor
    cudaFree(data);
  }
#else
  (void)bytes;
#endif
}

void copy(void* dst, MemorySpace dst_space, const void* src, MemorySpace src_space, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (dst_space == MemorySpace::host && src_space == MemorySpace::host) {
    std::memmove(dst, src, bytes);
    return;
  }
#ifdef DEPTHBENCH_HAVE_CUDA
  check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy");
#else
  no_cuda();
#endif
}

void zero(MemorySpace space, void* data, size_t bytes) {
  if (bytes == 0) return;
  if (space == MemorySpace::host) {
    std::memset(data, 0, bytes);
    return;
  }
#ifdef DEPTHBENCH_HAVE_CUDA
  check(cudaMemset(data, 0, bytes), "cudaMemset");
#else
  no_cuda();
#endif
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
