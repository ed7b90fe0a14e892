#include "ops/cuda/cuda_memory.hpp"

#include <cstdint>
#include <cstring>
#include <mutex>
#include <set>

#include "core/error.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/op_stream.hpp"

namespace db::cuda {
namespace {

// Every op and copy of the backend runs on current_stream(): the legacy default stream, or the
// capture stream while a micro-batch is captured (op_stream.hpp).
class CudaMemory final : public MemoryResource {
 public:
  const char* name() const override { return "cuda"; }
  bool is_host() const override { return false; }
  void* allocate(size_t bytes) override {
    void* p = device_allocate(bytes, current_stream());
    if (BufferWatch* w = BufferWatch::current(); w && p) w->on_allocate(p);
    return p;
  }
  void release(void* data, size_t) noexcept override {
    if (!data) return;
    BufferWatch* w = BufferWatch::current();
    if (!(w && w->on_release(data))) note_buffer_release();  // a graph may hold its address
    device_release(data, current_stream());
  }
  // Synchronous on the default stream, so a host source or destination is ready on return.
  // While capturing, only device-to-device copies (recorded on the capture stream): a host copy
  // would be replayed with whatever the host memory holds then.
  void copy(void* dst, const void* src, size_t bytes) override {
    if (!capturing()) {
      CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
      return;
    }
    if (!is_device(dst) || !is_device(src))  // Error is header-only: no link to depthbench_lib
      throw Error("a copy between host and device memory inside a captured micro-batch");
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, current_stream()));
  }
  void zero(void* data, size_t bytes) override {
    CUDA_CHECK(cudaMemsetAsync(data, 0, bytes, current_stream()));
  }

 private:
  static bool is_device(const void* p) {
    cudaPointerAttributes attributes{};
    return cudaPointerGetAttributes(&attributes, p) == cudaSuccess &&
           attributes.type == cudaMemoryTypeDevice;
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

// The scratch of a replayed CUDA graph (cuda_graph.hpp) lives in the device's graph memory, not
// in the pool: the mark adds both (an upper bound, the two peaks need not coincide).
size_t peak_memory_bytes() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  uint64_t high = 0, graph_high = 0;
  CUDA_CHECK(cudaMemPoolGetAttribute(current_pool(), cudaMemPoolAttrUsedMemHigh, &high));
  CUDA_CHECK(cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrUsedMemHigh, &graph_high));
  return size_t(high + graph_high);
}

void reset_peak_memory() {
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  uint64_t zero = 0;  // the only value the attributes take: resets the marks to the current use
  CUDA_CHECK(cudaMemPoolSetAttribute(current_pool(), cudaMemPoolAttrUsedMemHigh, &zero));
  CUDA_CHECK(cudaDeviceSetGraphMemAttribute(device, cudaGraphMemAttrUsedMemHigh, &zero));
}

void release_unused_pool_memory() {
  trim_pool();
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
