#include "ops/cuda/cuda_graph.hpp"

#include <cstdio>
#include <exception>

#include "core/error.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "ops/cuda/op_stream.hpp"

namespace db::cuda {

MicroBatchGraphs::~MicroBatchGraphs() {
  bool synchronized = false;
  for (auto& [key, e] : entries_)
    if (e.exec) {
      if (!synchronized) cudaDeviceSynchronize();  // a replay may still run; never throws
      synchronized = true;
      cudaGraphExecDestroy(e.exec);
    }
  if (capture_stream_) cudaStreamDestroy(capture_stream_);
}

void MicroBatchGraphs::run(const std::string& key, const std::function<void()>& body) {
  if (mode_ == CudaGraphs::off || !failure_.empty()) return body();
  Entry& e = entries_[key];
  const uint64_t now = buffer_release_count();
  if (e.exec && e.captured_at == now) {
    CUDA_CHECK(cudaGraphLaunch(e.exec, nullptr));  // in order with the eager work around it
    return;
  }
  if (e.exec) drop(e);  // a buffer it used may be gone
  if (e.eager_runs > 0 && e.clean_at == now) {
    const std::string reason = capture(e, body);
    if (reason.empty()) {
      CUDA_CHECK(cudaGraphLaunch(e.exec, nullptr));
      return;
    }
    fail(key, reason);  // throws under `on`
    return body();      // nothing of the failed capture ran
  }
  bool clean = false;
  {
    BufferWatch watch;
    body();
    clean = watch.buffers_unchanged();
  }
  e.clean_at = clean ? buffer_release_count() : kNever;
  ++e.eager_runs;
  // The first run sizes the buffers and a larger shape may grow them once more; a micro-batch
  // that still changes them after that re-makes them every time and can never be replayed.
  e.unclean_in_a_row = clean ? 0 : e.unclean_in_a_row + 1;
  if (e.unclean_in_a_row >= 3)
    fail(key,
         "the micro-batch re-allocates model buffers at every run, so no recording of it "
         "would stay valid");
}

std::string MicroBatchGraphs::capture(Entry& e, const std::function<void()>& body) {
  // A blocking stream: work that slips onto the legacy stream during the capture is an error
  // (it would otherwise run now instead of at each replay).
  if (!capture_stream_) CUDA_CHECK(cudaStreamCreate(&capture_stream_));
  const uint64_t before = buffer_release_count();
  std::string error;
  cudaGraph_t graph = nullptr;
  bool buffers_unchanged = false;
  {
    BufferWatch watch;
    StreamRedirect redirect(capture_stream_);
    // Thread-local mode: a synchronising or synchronous call on this thread ends the capture
    // with an error; other threads (NCCL's) are not affected.
    const cudaError_t began =
        cudaStreamBeginCapture(capture_stream_, cudaStreamCaptureModeThreadLocal);
    if (began != cudaSuccess) {
      cudaGetLastError();
      return std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(began);
    }
    try {
      body();
    } catch (const std::exception& x) {
      error = x.what();
    }
    const cudaError_t ended = cudaStreamEndCapture(capture_stream_, &graph);
    if (error.empty() && ended != cudaSuccess) error = cudaGetErrorString(ended);
    buffers_unchanged = watch.buffers_unchanged();
  }
  cudaGetLastError();  // capture errors are not sticky: clear the last one
  if (!buffers_unchanged || buffer_release_count() != before) {
    if (graph) cudaGraphDestroy(graph);
    // The micro-batch resized a model buffer while captured: that buffer now holds memory of a
    // graph that will never run, and no eager fallback could use it.
    throw Error(
        "CUDA graph capture: the micro-batch changed the model's buffers, which the "
        "eager run before it did not (" +
        (error.empty() ? std::string("no error") : error) + "); run with train.cuda_graphs = off");
  }
  if (!error.empty()) {
    if (graph) cudaGraphDestroy(graph);
    return error;
  }
  const cudaError_t made = cudaGraphInstantiateWithFlags(&e.exec, graph, 0);
  cudaGraphDestroy(graph);  // the executable graph keeps what it needs
  if (made != cudaSuccess) {
    cudaGetLastError();
    e.exec = nullptr;
    return std::string("instantiation: ") + cudaGetErrorString(made);
  }
  e.captured_at = buffer_release_count();
  ++captures_;
  release_unused_pool_memory();  // the eager runs' scratch, now the graph's
  return "";
}

void MicroBatchGraphs::drop(Entry& e) {
  CUDA_CHECK(cudaDeviceSynchronize());  // a replay may still run
  CUDA_CHECK(cudaGraphExecDestroy(e.exec));
  e.exec = nullptr;
  e.captured_at = kNever;
}

void MicroBatchGraphs::fail(const std::string& key, const std::string& reason) {
  const std::string line = "CUDA graph capture of " + key + " failed: " + reason;
  if (mode_ == CudaGraphs::on) throw Error("train.cuda_graphs = on: " + line);
  failure_ = reason;
  for (auto& [k, e] : entries_)
    if (e.exec) drop(e);
  std::printf("cuda_graphs: %s; running eagerly\n", line.c_str());
  std::fflush(stdout);
}

std::string MicroBatchGraphs::status() const {
  if (mode_ == CudaGraphs::off) return "off";
  if (!failure_.empty()) return "eager after capture failed: " + failure_;
  return captures_ > 0 ? "captured" : "not captured yet";
}

}  // namespace db::cuda
