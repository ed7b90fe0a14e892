// A typed block of the stream-ordered pool (cuda_memory.hpp) that lives for one op: allocated
// and freed on the op's stream, so the pool hands it to the next op at once and the free waits
// for the kernels queued before it. Move-only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>

#include "ops/cuda/cuda_memory.hpp"

namespace db::cuda {

template <class T>
class ScratchBuffer {
 public:
  ScratchBuffer(size_t count, cudaStream_t stream)
      : data_(static_cast<T*>(device_allocate(count * sizeof(T), stream))), stream_(stream) {}
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ScratchBuffer(ScratchBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), stream_(other.stream_) {}
  ~ScratchBuffer() { device_release(data_, stream_); }

  T* data() const { return data_; }  // nullptr for zero elements

 private:
  T* data_;
  cudaStream_t stream_;
};

}  // namespace db::cuda
