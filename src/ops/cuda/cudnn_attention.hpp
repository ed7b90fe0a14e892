// Causal grouped-query attention through cuDNN 9's fused flash attention (train.attention =
// cudnn), built with the backend graph API (cudnnBackend* descriptors), in the layouts of
// attention.hpp but in bf16 with a head dim padded to a multiple of 8 (padded_head_dim):
// q, o [B, T, H, hd_p]; k, v [B, T, H_kv, hd_p]; lse [B, H, T] fp32, the natural-log
// log-sum-exp of the scaled scores, as our kernels write it. The softmax scale is
// 1/sqrt(s.head_dim), the real head dim, whatever the padding.
//
// The graphs (doc/cuda.md "Attention paths"): forward S = Q·Kᵀ·scale, the causal mask as index
// generation (row, column) + compare (row ≥ column) + select (−∞), softmax with its statistics
// (max, Σexp → lse), O = P·V; backward recomputes P from lse and writes dQ directly (no fp32
// atomics: the deterministic variant), dK and dV summed over each kv head's query heads.
// Execution plans are built on first use of a shape (seconds) and cached for the whole process
// and device, with one cuDNN handle per device: every CudnnAttention (each model, test case or
// sweep run) shares them. A shape cuDNN refuses is remembered with its reason. Without cuDNN in
// the build or on the node every shape is refused with the reason.
#pragma once
#include <memory>
#include <string>

#include "ops/cuda/attention.hpp"
#include "ops/cuda/types.hpp"

namespace db::cuda {

// For the run file (the CUDA backend's `cudnn` property): "9.19.0 (DIR)" when the library loads,
// else "unavailable: <why>".
std::string cudnn_description();

class CudnnAttention {
 public:
  CudnnAttention();
  ~CudnnAttention();
  CudnnAttention(const CudnnAttention&) = delete;
  CudnnAttention& operator=(const CudnnAttention&) = delete;

  static int padded_head_dim(int head_dim) { return (head_dim + 7) / 8 * 8; }

  // "" when both plans of the shape exist (built now if needed), else why not, in one line.
  // Never throws for a refusal: the caller decides between an error and a fallback.
  std::string prepare(const AttentionShape& s);

  // Need prepare(s) == "" first. Workspace comes from the stream-ordered pool.
  void forward(bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v,
               const AttentionShape& s, cudaStream_t stream);
  // dq, dk, dv overwritten.
  void backward(bf16* dq, bf16* dk, bf16* dv, const bf16* d_o, const bf16* o, const float* lse,
                const bf16* q, const bf16* k, const bf16* v, const AttentionShape& s,
                cudaStream_t stream);

  // How many shapes' graphs this process has built (each once per device, whatever the number
  // of CudnnAttention objects): what the test of the process-wide cache counts.
  static int64_t graph_builds_in_process();

  // From now on forward and backward throw as a failed execution would (a db::Error), so that
  // a gpu test can show what the caller does then.
  void fail_executions_for_test() { fail_executions_ = true; }

 private:
  void check_not_failed_for_test(const AttentionShape& s) const;

  struct Impl;
  std::unique_ptr<Impl> impl_;
  bool fail_executions_ = false;
};

}  // namespace db::cuda
