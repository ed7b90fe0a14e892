// Where the CUDA backend's work goes, and the bookkeeping that keeps a captured micro-batch
// (cuda_graph.hpp) valid.
//
// Every op, pool allocation and model-buffer copy is enqueued on current_stream(): the legacy
// default stream, except on a thread that is capturing a micro-batch into a CUDA graph, where it
// is the capture stream (the legacy stream cannot be captured). So the eager path is exactly
// what it was, and a capture records everything the micro-batch enqueues.
//
// A graph holds the addresses of the model's buffers. The memory space cuda (cuda_memory.cpp)
// therefore counts the releases of its blocks: a graph captured at one count is replayed only
// while the count is unchanged. A BufferWatch around one micro-batch tells whether it left the
// buffers as they were (no block released that was allocated before it, none allocated that
// outlives it): only then may the same micro-batch be captured.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <unordered_set>

namespace db::cuda {

cudaStream_t current_stream();
// True on a thread whose current stream is a capture stream.
bool capturing();

// Sends this thread's work to `stream` while it lives (nested redirections are not supported).
class StreamRedirect {
 public:
  explicit StreamRedirect(cudaStream_t stream);
  ~StreamRedirect();
  StreamRedirect(const StreamRedirect&) = delete;
  StreamRedirect& operator=(const StreamRedirect&) = delete;
};

// Releases of model-buffer blocks (memory space cuda) so far, except those of temporaries
// allocated and released under one BufferWatch; and a bump for owners of other blocks a graph
// may read (the RoPE tables) when they replace them.
uint64_t buffer_release_count();
void note_buffer_release();

// Watches the memory space cuda on this thread while it lives.
class BufferWatch {
 public:
  BufferWatch();
  ~BufferWatch();
  BufferWatch(const BufferWatch&) = delete;
  BufferWatch& operator=(const BufferWatch&) = delete;
  // No block released that was allocated before the watch, none allocated that is still alive.
  bool buffers_unchanged() const { return released_older_ == 0 && allocated_.empty(); }

  // Called by the memory space.
  void on_allocate(void* p) { allocated_.insert(p); }
  // True when p was allocated under the watch (a temporary of the watched work).
  bool on_release(void* p) {
    if (allocated_.erase(p) == 1) return true;
    ++released_older_;
    return false;
  }
  static BufferWatch* current();

 private:
  std::unordered_set<void*> allocated_;
  int64_t released_older_ = 0;
  BufferWatch* previous_;
};

}  // namespace db::cuda
