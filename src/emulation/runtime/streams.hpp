// The emulated runtime's streams, events and graphs (internal to runtime/). Work is deferred:
// a stream is a queue, run when the host waits for it or when another stream's wait needs it.
#pragma once
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace db::emulation {

struct Graph;

struct Stream {
  bool blocking = true;    // synchronises with the legacy stream (cudaStreamNonBlocking: no)
  uint64_t issued = 0;     // sequence number of the last work enqueued
  uint64_t completed = 0;  // sequence number of the last work run
  struct Work {
    uint64_t sequence;
    std::string what;
    std::function<void()> run;
  };
  std::deque<Work> pending;
  // Capture (cudaStreamBeginCapture): work goes into `graph` instead of `pending`.
  std::shared_ptr<Graph> graph;
  cudaStreamCaptureMode capture_mode = cudaStreamCaptureModeGlobal;
  bool capture_invalidated = false;
  std::string capture_error;
};

struct Event {
  Stream* stream = nullptr;  // where it was last recorded (nullptr: never)
  uint64_t sequence = 0;     // the work it follows
  bool timing = true;
  std::chrono::steady_clock::time_point when{};  // when the recorded position ran
  bool reached = true;
};

// A captured graph: the work recorded during capture, replayed in order; memory it allocated
// (cudaMallocAsync during capture) is its own until the graph is destroyed.
struct Graph {
  std::vector<Stream::Work> work;
  std::vector<std::pair<void*, size_t>> owned_memory;
};

// The legacy default stream (nullptr in the API).
Stream& legacy_stream();
Stream& stream_of(cudaStream_t s);
cudaStream_t create_stream(bool blocking);
// The runtime's one lock: streams, allocations and the bookkeeping of both.
std::recursive_mutex& streams_mutex();

// `handle` waits for the position `event` was recorded at (cudaStreamWaitEvent).
cudaError_t wait_for_event(cudaStream_t handle, const Event& event);

// Capture of `stream` into a graph (cudaStreamBeginCapture / EndCapture); end_capture returns
// nullptr with status cudaErrorStreamCaptureInvalidated when a forbidden call broke it.
void begin_capture(Stream& stream, cudaStreamCaptureMode mode);
std::shared_ptr<Graph> end_capture(Stream& stream, cudaError_t& status);

// Runs `stream`'s work up to and including `sequence` (and whatever it waits for).
void drain(Stream& stream, uint64_t sequence);
void drain(Stream& stream);
void drain_all();

// The capture of this thread, if any (for the capture rules): the capturing stream or nullptr.
Stream* capturing_stream();
// A call CUDA forbids while this thread captures (a synchronisation, a pageable copy): marks
// the capture invalid and returns the error to return; cudaSuccess when not capturing.
cudaError_t forbidden_during_capture(const char* what);

// The sticky error of a fault in emulated work (cudaSuccess when none) and the last error.
cudaError_t sticky_error();
void set_sticky_error(cudaError_t code, const std::string& message);
cudaError_t record_error(cudaError_t code);  // sets the last error; returns code
cudaError_t take_last_error();               // cudaGetLastError: returns and clears it
cudaError_t peek_last_error();

}  // namespace db::emulation
