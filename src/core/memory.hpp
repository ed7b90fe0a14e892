// Where a buffer's bytes live. A memory space is a handle to a MemoryResource: the host's, which
// core defines, or a backend's (a GPU's memory), which the backend's own folder defines and
// hands out through its Backend object (ops/backend.hpp). Core names no backend.
//
// The model code allocates its working buffers in the *current* memory space, which a
// MemorySpaceScope sets for the duration of a model call (as cudaSetDevice sets a current
// device): a design file never names a backend, and a CPU model and a GPU model can live side
// by side in one process (the parity tests do exactly that).
#pragma once
#include <cstddef>

namespace db {

// Allocation, release and copies of one kind of memory. Implementations live as long as the
// program (function-local statics): buffers may be released during static destruction.
class MemoryResource {
 public:
  virtual const char* name() const = 0;
  virtual bool is_host() const = 0;
  virtual void* allocate(size_t bytes) = 0;
  // `bytes`: the size it was allocated with (device blocks are cached by size for reuse).
  virtual void release(void* data, size_t bytes) noexcept = 0;
  // A copy of which at least one side lies in this resource and the other in this resource or
  // in host memory.
  virtual void copy(void* dst, const void* src, size_t bytes) = 0;
  virtual void zero(void* data, size_t bytes) = 0;

 protected:
  ~MemoryResource() = default;
};

class MemorySpace {
 public:
  static const MemorySpace host;
  constexpr explicit MemorySpace(MemoryResource* resource) : resource_(resource) {}

  MemoryResource& resource() const { return *resource_; }
  const char* name() const { return resource_->name(); }
  bool is_host() const { return resource_->is_host(); }
  // Spelled out: the CUDA folder's .cu files, which include this header, are C++17.
  friend bool operator==(MemorySpace a, MemorySpace b) { return a.resource_ == b.resource_; }
  friend bool operator!=(MemorySpace a, MemorySpace b) { return !(a == b); }

 private:
  MemoryResource* resource_;
};

namespace memory {
void* allocate(MemorySpace space, size_t bytes);
void release(MemorySpace space, void* data, size_t bytes) noexcept;
// Copies between any two spaces (two device spaces: through a host copy).
void copy(void* dst, MemorySpace dst_space, const void* src, MemorySpace src_space, size_t bytes);
void zero(MemorySpace space, void* data, size_t bytes);
// Bytes of host memory held by buffers (core/buffer.hpp) now, and the most since the last
// reset_host_peak: what a CPU model keeps, e.g. its activations under train.recompute (the CPU
// backend's memory_peak_bytes is the process's resident set, which no reset lowers).
size_t host_bytes_in_use();
size_t host_peak_bytes();
void reset_host_peak();
}  // namespace memory

// The space new buffers are allocated in on this thread (host unless a scope says otherwise).
MemorySpace current_memory_space();

class MemorySpaceScope {
 public:
  explicit MemorySpaceScope(MemorySpace space);
  ~MemorySpaceScope();
  MemorySpaceScope(const MemorySpaceScope&) = delete;
  MemorySpaceScope& operator=(const MemorySpaceScope&) = delete;

 private:
  MemorySpace previous_;
};

}  // namespace db
