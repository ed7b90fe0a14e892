#include "emulation/runtime/streams.hpp"

#include <cstdio>
#include <list>
#include <mutex>

#include "emulation/runtime/stream_work.hpp"
#include "emulation/simt/fault.hpp"

namespace db::emulation {
namespace {

// Every stream ever created, in creation order (destroyed ones are drained and kept empty), so
// that the legacy stream can wait for the blocking streams and drain_all can visit them all.
std::list<Stream>& all_streams() {
  static std::list<Stream> streams;
  return streams;
}

std::recursive_mutex& runtime_mutex() {
  static std::recursive_mutex m;
  return m;
}

thread_local Stream* capture = nullptr;
cudaError_t sticky = cudaSuccess;
thread_local cudaError_t last_error = cudaSuccess;

// The blocking streams' (or the legacy stream's) position this work must follow.
struct Wait {
  Stream* stream;
  uint64_t sequence;
};

void run_work(Stream::Work& work) {
  if (sticky != cudaSuccess) return;  // a faulted context runs nothing more
  try {
    work.run();
  } catch (const DeviceFault& fault) {
    set_sticky_error(cudaErrorLaunchFailure, std::string(fault.what()) + " (in " + work.what + ")");
  } catch (const std::exception& e) {
    set_sticky_error(cudaErrorLaunchFailure, std::string(e.what()) + " (in " + work.what + ")");
  }
}

Stream::Work waiting_work(const char* what, std::vector<Wait> waits) {
  return Stream::Work{0, what, [waits] {
                        for (const Wait& w : waits) drain(*w.stream, w.sequence);
                      }};
}

cudaError_t append(Stream& stream, Stream::Work work) {
  if (stream.graph) {
    stream.graph->work.push_back(std::move(work));
    return cudaSuccess;
  }
  work.sequence = ++stream.issued;
  stream.pending.push_back(std::move(work));
  return cudaSuccess;
}

}  // namespace

Stream& legacy_stream() {
  static Stream& legacy = all_streams().emplace_back();
  return legacy;
}

Stream& stream_of(cudaStream_t s) {
  return s ? *reinterpret_cast<Stream*>(s) : legacy_stream();
}

cudaStream_t create_stream(bool blocking) {
  std::lock_guard lock(runtime_mutex());
  legacy_stream();
  Stream& s = all_streams().emplace_back();
  s.blocking = blocking;
  return reinterpret_cast<cudaStream_t>(&s);
}

void drain(Stream& stream, uint64_t sequence) {
  std::lock_guard lock(runtime_mutex());
  while (stream.completed < sequence && !stream.pending.empty()) {
    Stream::Work work = std::move(stream.pending.front());
    stream.pending.pop_front();
    run_work(work);
    stream.completed = work.sequence;
  }
}

void drain(Stream& stream) {
  drain(stream, stream.issued);
}

// The legacy stream first, then the others in creation order: a consumer on the legacy stream
// that forgot to wait for a side stream runs before that stream's work.
void drain_all() {
  std::lock_guard lock(runtime_mutex());
  for (bool again = true; again;) {
    again = false;
    for (Stream& s : all_streams()) {
      if (s.completed < s.issued) again = true;
      drain(s);
    }
  }
}

cudaError_t enqueue(cudaStream_t handle, const char* what, std::function<void()> run) {
  std::lock_guard lock(runtime_mutex());
  if (sticky != cudaSuccess) return record_error(sticky);
  Stream& stream = stream_of(handle);
  // The legacy stream while a blocking stream of this thread captures would join the capture
  // implicitly: CUDA refuses (cudaErrorStreamCaptureImplicit) and invalidates the capture.
  if (&stream == &legacy_stream() && capture && capture->blocking) {
    capture->capture_invalidated = true;
    capture->capture_error = std::string("legacy stream used during capture by ") + what;
    return record_error(cudaErrorStreamCaptureImplicit);
  }
  if (!stream.graph) {
    // Implicit synchronisation between the legacy stream and the blocking streams.
    std::vector<Wait> waits;
    if (&stream == &legacy_stream()) {
      for (Stream& s : all_streams())
        if (&s != &stream && s.blocking && s.issued > s.completed) waits.push_back({&s, s.issued});
    } else if (stream.blocking) {
      Stream& legacy = legacy_stream();
      if (legacy.issued > legacy.completed) waits.push_back({&legacy, legacy.issued});
    }
    if (!waits.empty()) append(stream, waiting_work("implicit synchronisation", std::move(waits)));
  }
  return append(stream, Stream::Work{0, what, std::move(run)});
}

cudaError_t wait_for_event(cudaStream_t handle, const Event& event) {
  std::lock_guard lock(runtime_mutex());
  if (!event.stream) return cudaSuccess;  // never recorded: nothing to wait for
  Stream& stream = stream_of(handle);
  if (event.stream->graph || stream.graph) {
    // Within one capture the order is the capture's own; other cross-stream forms are not
    // emulated.
    if (event.stream == &stream) return cudaSuccess;
    return record_error(cudaErrorStreamCaptureUnsupported);
  }
  if (event.stream == &stream) return cudaSuccess;
  return append(stream, waiting_work("cudaStreamWaitEvent", {{event.stream, event.sequence}}));
}

Stream* capturing_stream() {
  return capture;
}

void begin_capture(Stream& stream, cudaStreamCaptureMode mode) {
  stream.graph = std::make_shared<Graph>();
  stream.capture_mode = mode;
  stream.capture_invalidated = false;
  stream.capture_error.clear();
  capture = &stream;
}

std::shared_ptr<Graph> end_capture(Stream& stream, cudaError_t& status) {
  std::shared_ptr<Graph> graph = std::move(stream.graph);
  stream.graph.reset();
  if (capture == &stream) capture = nullptr;
  status = stream.capture_invalidated ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
  if (stream.capture_invalidated) {
    std::fprintf(stderr, "emulated CUDA: capture invalidated: %s\n", stream.capture_error.c_str());
    return nullptr;
  }
  return graph;
}

cudaError_t forbidden_during_capture(const char* what) {
  if (!capture) return cudaSuccess;
  capture->capture_invalidated = true;
  capture->capture_error = std::string(what) + " is not permitted while a stream captures";
  return record_error(cudaErrorStreamCaptureUnsupported);
}

cudaError_t sticky_error() {
  return sticky;
}

void set_sticky_error(cudaError_t code, const std::string& message) {
  if (sticky == cudaSuccess)
    std::fprintf(stderr, "emulated CUDA device fault: %s\n", message.c_str());
  sticky = code;
  last_error = code;
}

cudaError_t record_error(cudaError_t code) {
  if (code != cudaSuccess) last_error = code;
  return code;
}

cudaError_t take_last_error() {
  const cudaError_t e = sticky != cudaSuccess ? sticky : last_error;
  last_error = cudaSuccess;
  return e;
}

cudaError_t peek_last_error() {
  return sticky != cudaSuccess ? sticky : last_error;
}

std::recursive_mutex& streams_mutex() {
  return runtime_mutex();
}

}  // namespace db::emulation
