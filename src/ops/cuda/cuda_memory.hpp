// GPU memory of the CUDA backend: ONE allocator for everything — the buffers of the model
// (memory space "cuda"), the scratch of the kernels and DeviceBuffer — the device's
// stream-ordered pool (cudaMallocAsync / cudaFreeAsync).
//   * Reuse is stream-ordered: the pool hands a freed block to a later allocation on the same
//     stream at once, and to another stream only after the free has completed or through the
//     event dependencies the driver inserts. A buffer used on a second stream must be freed on
//     that stream, or after an event joins it to the freeing stream.
//   * The pool keeps freed memory (release threshold: unlimited) instead of giving it back at
//     every synchronisation; release_cached_memory() trims it when a run ends, so the next run
//     of a sweep, of another shape, starts from an empty pool.
//   * An allocation that fails waits for the device, trims the pool and tries once more.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

#include "core/memory.hpp"

namespace db::cuda {

MemorySpace cuda_memory_space();

// Sets the release threshold of `device`'s pool (once per device; cheap to repeat).
void configure_memory_pool(int device);
// Waits for the device and returns the pool's unused memory to it.
void release_cached_memory();

// The pool's high-water mark of memory in use since the last reset_peak_memory (or since the
// pool was made), and its reset to what is in use now.
size_t peak_memory_bytes();
void reset_peak_memory();
// Returns the pool's unused memory to the device without waiting: after a micro-batch is
// captured, its scratch lives in graph memory and the pool's copy of it would sit idle.
void release_unused_pool_memory();

// Page-locked host memory (cudaHostAlloc): host memory to every reader, copied to the device by
// DMA without the driver's staging copy. Token batches live there (Backend::staging_space).
MemorySpace pinned_host_space();

// cudaMallocAsync with one flush-and-retry on failure; returns its final status.
cudaError_t malloc_async(void** p, size_t bytes, cudaStream_t stream);
template <class T>
cudaError_t malloc_async(T** p, size_t bytes, cudaStream_t stream) {
  return malloc_async(reinterpret_cast<void**>(p), bytes, stream);
}
// Throwing forms for the owners of longer-lived blocks (DeviceBuffer, the GEMM workspace).
void* device_allocate(size_t bytes, cudaStream_t stream = nullptr);
void device_release(void* p, cudaStream_t stream = nullptr) noexcept;

}  // namespace db::cuda
