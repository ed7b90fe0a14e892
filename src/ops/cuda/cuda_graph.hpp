// train.cuda_graphs: one micro-batch's forward and backward recorded as a CUDA graph per shape
// and replayed (doc/cuda.md, "Host overhead"). A deep narrow model launches thousands of small
// kernels per micro-batch; a graph launch replaces all those launches by one.
//
// Per key (the model puts the shape and the gradient scale in it), Ops::run_captured goes:
//   1. eager: the first micro-batch sizes the buffers, builds the GEMM plans, the attention
//      path and cuDNN plans, the RoPE tables;
//   2. eager under a BufferWatch (op_stream.hpp): it must leave the model's buffers as they
//      were, else the key runs eagerly again (and after three such runs in a row, it re-makes
//      its buffers every time: a failure, below);
//   3. captured on a capture stream (the ops follow current_stream()), instantiated and
//      launched; from then on replayed while no model buffer was released since the capture
//      (buffer_release_count), else captured again.
// A capture fails on a host synchronisation, a host copy or a synchronous API call inside the
// micro-batch (the capture mode forbids them on this thread) or on an instantiation error; then
// `auto` prints one line and runs every later micro-batch eagerly, `on` throws.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "ops/ops_options.hpp"

namespace db::cuda {

class MicroBatchGraphs {
 public:
  explicit MicroBatchGraphs(CudaGraphs mode) : mode_(mode) {}
  ~MicroBatchGraphs();
  MicroBatchGraphs(const MicroBatchGraphs&) = delete;
  MicroBatchGraphs& operator=(const MicroBatchGraphs&) = delete;

  void run(const std::string& key, const std::function<void()>& body);
  // "off", "not captured yet", "captured", "eager after capture failed: <reason>".
  std::string status() const;

 private:
  static constexpr uint64_t kNever = UINT64_MAX;
  struct Entry {
    int eager_runs = 0;
    int unclean_in_a_row = 0;    // eager runs in a row that changed the model's buffers
    uint64_t clean_at = kNever;  // release count after an eager run that changed no buffer
    cudaGraphExec_t exec = nullptr;
    uint64_t captured_at = kNever;
  };
  // Captures body into e.exec; returns the reason on failure ("" on success).
  std::string capture(Entry& e, const std::function<void()>& body);
  void drop(Entry& e);
  void fail(const std::string& key, const std::string& reason);

  CudaGraphs mode_;
  std::map<std::string, Entry> entries_;
  cudaStream_t capture_stream_ = nullptr;
  int captures_ = 0;
  std::string failure_;  // non-empty: eager from then on
};

}  // namespace db::cuda
