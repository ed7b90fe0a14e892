#include "ops/cuda/cuda_memory.hpp"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>

#include "ops/cuda/cuda_check.hpp"

namespace db::cuda {
namespace {

// Every op and copy of the backend runs on the legacy default stream (cuda_ops.cpp).
constexpr cudaStream_t kStream = nullptr;

class CudaMemory final : public MemoryResource {
 public:
  const char* name() const override { return "cuda"; }
  bool is_host() const override { return false; }
  void* allocate(size_t bytes) override { return device_allocate(bytes, kStream); }
  void release(void* data, size_t) noexcept override { device_release(data, kStream); }
  // Synchronous on the default stream, so a host source or destination is ready on return.
  void copy(void* dst, const void* src, size_t bytes) override {
    CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
  }
  void zero(void* data, size_t bytes) override {
    CUDA_CHECK(cudaMemsetAsync(data, 0, bytes, kStream));
  }
};

CudaMemory cuda_memory;  // constant-initialised, never destroyed in a way that matters

class PinnedHostMemory final : public MemoryResource {
 public:
  const char* name() const override { return "cuda_pinned_host"; }
  bool is_host() const override { return true; }
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
    return p;
  }
  void release(void* data, size_t) noexcept override { cudaFreeHost(data); }
  void copy(void* dst, const void* src, size_t bytes) override { std::memmove(dst, src, bytes); }
  void zero(void* data, size_t bytes) override { std::memset(data, 0, bytes); }
};

PinnedHostMemory pinned_host_memory;

cudaMemPool_t current_pool() {
  int device = 0;
  cudaMemPool_t pool = nullptr;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  return pool;
}

void trim_pool() {
  int device = 0;
  cudaMemPool_t pool = nullptr;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess)
    return;
  cudaMemPoolTrimTo(pool, 0);
}

}  // namespace

MemorySpace cuda_memory_space() {
  return MemorySpace(&cuda_memory);
}

MemorySpace pinned_host_space() {
  return MemorySpace(&pinned_host_memory);
}

size_t peak_memory_bytes() {
  uint64_t high = 0;
  CUDA_CHECK(cudaMemPoolGetAttribute(current_pool(), cudaMemPoolAttrUsedMemHigh, &high));
  return size_t(high);
}

void reset_peak_memory() {
  uint64_t zero = 0;  // the only value the attribute takes: resets the mark to the current use
  CUDA_CHECK(cudaMemPoolSetAttribute(current_pool(), cudaMemPoolAttrUsedMemHigh, &zero));
}

void configure_memory_pool(int device) {
  static std::mutex mutex;
  static std::set<int> configured;
  std::lock_guard<std::mutex> lock(mutex);
  if (!configured.insert(device).second) return;
  cudaMemPool_t pool = nullptr;
  CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, device));
  uint64_t keep_everything = UINT64_MAX;
  CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep_everything));
}

void release_cached_memory() {
  CUDA_CHECK(cudaDeviceSynchronize());
  trim_pool();
}

cudaError_t malloc_async(void** p, size_t bytes, cudaStream_t stream) {
  cudaError_t status = cudaMallocAsync(p, bytes, stream);
  if (status != cudaErrorMemoryAllocation) return status;
  cudaGetLastError();  // clear the out-of-memory error: it is not sticky
  // Freed blocks may wait for work still queued, and the pool may hold memory in pieces.
  cudaDeviceSynchronize();
  trim_pool();
  return cudaMallocAsync(p, bytes, stream);
}

void* device_allocate(size_t bytes, cudaStream_t stream) {
  void* p = nullptr;
  if (bytes > 0) CUDA_CHECK(malloc_async(&p, bytes, stream));
  return p;
}

void device_release(void* p, cudaStream_t stream) noexcept {
  if (p) cudaFreeAsync(p, stream);  // never throws: called from destructors
}

}  // namespace db::cuda
