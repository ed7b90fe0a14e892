// The attention of the CUDA ops (train.attention, ops/ops_options.hpp): which path runs each
// shape, and the copies around the bf16 fast paths where the activations are fp32 (the fp32
// ops) or bf16 with a head dim cuDNN pads (the bf16 storage ops, cuda_bf16_storage.hpp).
//   reference  the fused fp32 kernel of attention.hpp (the test oracle), on the fp32 tensors;
//   cudnn      cuDNN's fused SDPA (cudnn_attention.hpp) on bf16 copies, head dim padded to 8;
//   flash      our bf16 tensor-core kernel (flash_attention.hpp) on bf16 copies;
//   auto       cudnn when cuDNN runs the shape, else flash when it supports it, else reference,
//              with one line on stdout per shape that falls back; always reference when the
//              products are fp32 (parity runs stay fp32). A shape cuDNN planned but then fails
//              to run (an execution error, no memory for its workspace) moves to flash at that
//              call, with one line, and stays there.
// An explicit cudnn or flash that cannot run a shape is a db::Error naming the reason.
// The choice is made once per shape (B, T, H, H_kv, hd), at its first forward.
//
// MoDA (moda_forward/moda_backward) follows the same choice for its sequence part: reference
// runs the MoDA kernel of moda_attention.hpp; a fast path runs the sequence keys through cuDNN
// or flash and merges the depth entries through the log-sum-exp (moda_depth_merge.hpp).
// report() lists the path each shape ran, for the run file (`attention_paths`).
#pragma once
#include <map>
#include <string>
#include <tuple>

#include "ops/cuda/attention.hpp"
#include "ops/cuda/cudnn_attention.hpp"
#include "ops/ops_options.hpp"

namespace db::cuda {

class AttentionPaths {
 public:
  AttentionPaths(AttentionPath requested, Precision precision)
      : requested_(requested), precision_(precision) {}

  // The path that runs this shape (chosen and, for cudnn, planned on first use).
  AttentionPath path_for(const AttentionShape& s) { return path_for(s, false); }

  // As attention_forward / attention_backward of attention.hpp, in fp32 storage.
  void forward(float* o, float* lse, const float* q, const float* k, const float* v,
               const AttentionShape& s, cudaStream_t stream);
  void backward(float* dq, float* dk, float* dv, const float* d_o, const float* o, const float* lse,
                const float* q, const float* k, const float* v, const AttentionShape& s,
                cudaStream_t stream);

  // As moda_attention_forward / moda_attention_backward of moda_attention.hpp.
  void moda_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                    const float* depth_k, const float* depth_v, const ModaShape& s,
                    cudaStream_t stream);
  void moda_backward(float* dq, float* dk, float* dv, float* d_depth_k, float* d_depth_v,
                     const float* d_o, const float* o, const float* lse, const float* q,
                     const float* k, const float* v, const float* depth_k, const float* depth_v,
                     const ModaShape& s, cudaStream_t stream);

  // bf16 activation storage (cuda_bf16_storage.hpp): the same choice per shape (and the same
  // report), on bf16 tensors the fast paths read and write in place, through a padded copy only
  // where cuDNN pads the head dim. The reference path has no bf16 kernel: the caller asks
  // path_for / moda_path_for first and runs the fp32 ops on widened copies there; these throw
  // for a reference shape.
  void forward(bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v,
               const AttentionShape& s, cudaStream_t stream);
  void backward(bf16* dq, bf16* dk, bf16* dv, const bf16* d_o, const bf16* o, const float* lse,
                const bf16* q, const bf16* k, const bf16* v, const AttentionShape& s,
                cudaStream_t stream);
  AttentionPath moda_path_for(const ModaShape& s) { return path_for(sequence_part(s), true); }
  void moda_forward(bf16* o, float* lse, const bf16* q, const bf16* k, const bf16* v,
                    const bf16* depth_k, const bf16* depth_v, const ModaShape& s,
                    cudaStream_t stream);
  void moda_backward(bf16* dq, bf16* dk, bf16* dv, bf16* d_depth_k, bf16* d_depth_v,
                     const bf16* d_o, const bf16* o, const float* lse, const bf16* q, const bf16* k,
                     const bf16* v, const bf16* depth_k, const bf16* depth_v, const ModaShape& s,
                     cudaStream_t stream);

  // "B=8 T=2048 H=16 H_kv=8 hd=64: cudnn; moda B=8 T=2048 H=16 H_kv=8 hd=64: cudnn" — every
  // shape run so far, with the reason where auto fell back; "none" before the first.
  std::string report() const;

  // Makes every later cuDNN execution fail (CudnnAttention::fail_executions_for_test).
  void fail_cudnn_executions_for_test() { cudnn_.fail_executions_for_test(); }

 private:
  struct Choice {
    AttentionPath path;
    std::string fallback;  // why auto did not take cuDNN (or flash); "" otherwise
  };
  Choice choose(const AttentionShape& s);
  // (moda, B, T, H, H_kv, hd): MoDA's shapes are listed apart in the report.
  using ShapeKey = std::tuple<bool, int64_t, int, int, int, int>;
  static ShapeKey key_of(const AttentionShape& s, bool moda);
  // The path of this shape, for plain attention (moda = false) or MoDA's sequence part.
  AttentionPath path_for(const AttentionShape& s, bool moda);
  // Under auto, moves shape s from cuDNN to flash after cuDNN failed to run it (why); false
  // where auto was not asked for or flash does not run s (the caller keeps the error).
  bool fall_back_after_cudnn_failed(const AttentionShape& s, const std::string& why);
  static AttentionShape sequence_part(const ModaShape& s) {
    return {s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim};
  }
  void run_forward(AttentionPath path, float* o, float* lse, const float* q, const float* k,
                   const float* v, const AttentionShape& s, cudaStream_t stream);
  void run_backward(AttentionPath path, float* dq, float* dk, float* dv, const float* d_o,
                    const float* o, const float* lse, const float* q, const float* k,
                    const float* v, const AttentionShape& s, cudaStream_t stream);
  // cuDNN or flash on activations of type S (float or bf16).
  template <class S>
  void run_fast_forward(AttentionPath path, S* o, float* lse, const S* q, const S* k, const S* v,
                        const AttentionShape& s, cudaStream_t stream);
  template <class S>
  void run_fast_backward(AttentionPath path, S* dq, S* dk, S* dv, const S* d_o, const S* o,
                         const float* lse, const S* q, const S* k, const S* v,
                         const AttentionShape& s, cudaStream_t stream);
  // The fast path of a bf16 call; a db::Error for a reference shape.
  AttentionPath fast_path(AttentionPath path, const AttentionShape& s) const;

  AttentionPath requested_;
  Precision precision_;
  CudnnAttention cudnn_;
  std::map<ShapeKey, Choice> chosen_;
};

}  // namespace db::cuda
