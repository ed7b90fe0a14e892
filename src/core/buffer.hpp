// A device-neutral array of T: the model's activations, caches, parameters and gradients.
// It lives in one memory space (core/memory.hpp), chosen when it is first sized: the current
// space of the thread. The model code only passes its data() to ops; element access from the
// host goes through to_host() / upload(), which work in every space.
//
// Like std::vector but without element access or growth that keeps contents: resize() to a new
// size leaves the contents undefined (every user overwrites them); copies are deep. Like a
// vector, it keeps its capacity: a smaller size in the same space reuses the block, so buffers
// sized by a micro-batch keep their addresses when a shorter micro-batch or an evaluation
// comes between two of the same shape (what a replayed CUDA graph needs, doc/cuda.md).
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "core/memory.hpp"

namespace db {

template <class T>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t count) { resize(count); }
  Buffer(const Buffer& other) { *this = other; }
  Buffer(Buffer&& other) noexcept { swap(other); }
  Buffer& operator=(const Buffer& other) {
    if (this != &other) assign(other.data(), other.size(), other.space());
    return *this;
  }
  Buffer& operator=(Buffer&& other) noexcept {
    Buffer(std::move(other)).swap(*this);
    return *this;
  }
  ~Buffer() { memory::release(space_, data_, capacity_ * sizeof(T)); }

  // The same size keeps data and space; a size within the capacity keeps the block when the
  // current memory space is the buffer's; anything else reallocates in the current space.
  void resize(size_t count) {
    if (count == size_ && (data_ || count == 0)) return;
    if (data_ && count <= capacity_ && space_ == current_memory_space()) {
      size_ = count;
      return;
    }
    memory::release(space_, data_, capacity_ * sizeof(T));
    data_ = nullptr;
    size_ = capacity_ = 0;
    space_ = current_memory_space();
    data_ = static_cast<T*>(memory::allocate(space_, count * sizeof(T)));
    size_ = capacity_ = count;
  }
  // resize, then every element 0.
  void assign_zeros(size_t count) {
    resize(count);
    memory::zero(space_, data_, count * sizeof(T));
  }
  void zero() { memory::zero(space_, data_, size_ * sizeof(T)); }
  // Copies `count` elements from `src`, which lives in `src_space` (default: the current one).
  void assign(const T* src, size_t count, MemorySpace src_space = current_memory_space()) {
    resize(count);
    memory::copy(data_, space_, src, src_space, count * sizeof(T));
  }
  // Copies out to `dst`, which lives in `dst_space`.
  void copy_to(T* dst, size_t count, MemorySpace dst_space = current_memory_space()) const {
    memory::copy(dst, dst_space, data_, space_, count * sizeof(T));
  }
  void upload(const std::vector<T>& host) { assign(host.data(), host.size(), MemorySpace::host); }
  std::vector<T> to_host() const {
    std::vector<T> host(size_);
    copy_to(host.data(), size_, MemorySpace::host);
    return host;
  }

  void swap(Buffer& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
    std::swap(space_, other.space_);
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  MemorySpace space() const { return space_; }
  bool on_host() const { return space_ == MemorySpace::host; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;  // elements allocated (≥ size_)
  MemorySpace space_ = MemorySpace::host;
};

}  // namespace db
