// Where a buffer's bytes live: host memory (the CPU backend) or the current GPU's memory (the
// CUDA backend). Safe in every build: without the CUDA backend compiled in, asking for GPU
// memory is a db::Error.
//
// The model code allocates its working buffers in the *current* memory space, which a
// MemorySpaceScope sets for the duration of a model call (as cudaSetDevice sets a current
// device): a design file never names a backend, and a CPU model and a GPU model can live side
// by side in one process (the parity tests do exactly that).
#pragma once
#include <cstddef>

namespace db {

enum class MemorySpace { host, cuda };

namespace memory {
void* allocate(MemorySpace space, size_t bytes);
// `bytes`: the size it was allocated with (GPU blocks are cached by size for reuse).
void release(MemorySpace space, void* data, size_t bytes) noexcept;
// Copies between any two spaces.
void copy(void* dst, MemorySpace dst_space, const void* src, MemorySpace src_space, size_t bytes);
void zero(MemorySpace space, void* data, size_t bytes);
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
