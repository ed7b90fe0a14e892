#include "ops/cuda/op_stream.hpp"

#include <atomic>

namespace db::cuda {
namespace {
thread_local cudaStream_t redirected = nullptr;
thread_local BufferWatch* watch = nullptr;
std::atomic<uint64_t> releases{0};
}  // namespace

cudaStream_t current_stream() {
  return redirected;  // nullptr: the legacy default stream
}

bool capturing() {
  return redirected != nullptr;
}

StreamRedirect::StreamRedirect(cudaStream_t stream) {
  redirected = stream;
}

StreamRedirect::~StreamRedirect() {
  redirected = nullptr;
}

uint64_t buffer_release_count() {
  return releases.load();
}

void note_buffer_release() {
  ++releases;
}

BufferWatch::BufferWatch() : previous_(watch) {
  watch = this;
}

BufferWatch::~BufferWatch() {
  watch = previous_;
}

BufferWatch* BufferWatch::current() {
  return watch;
}

}  // namespace db::cuda
