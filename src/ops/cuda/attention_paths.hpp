// The attention of the CUDA ops (train.attention, ops/ops_options.hpp): which path runs each
// shape, and the copies around the bf16 fast paths (the ops store fp32 activations).
//   reference  the fused fp32 kernel of attention.hpp (the test oracle), on the fp32 tensors;
//   cudnn      cuDNN's fused SDPA (cudnn_attention.hpp) on bf16 copies, head dim padded to 8;
//   flash      our bf16 tensor-core kernel (flash_attention.hpp) on bf16 copies;
//   auto       cudnn when cuDNN runs the shape, else flash when it supports it, else reference,
//              with one line on stdout per shape that falls back; always reference when the
//              products are fp32 (parity runs stay fp32).
// An explicit cudnn or flash that cannot run a shape is a db::Error naming the reason.
// The choice is made once per shape (B, T, H, H_kv, hd), at its first forward.
#pragma once
#include <map>
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
  AttentionPath path_for(const AttentionShape& s);

  // As attention_forward / attention_backward of attention.hpp, in fp32 storage.
  void forward(float* o, float* lse, const float* q, const float* k, const float* v,
               const AttentionShape& s, cudaStream_t stream);
  void backward(float* dq, float* dk, float* dv, const float* d_o, const float* o, const float* lse,
                const float* q, const float* k, const float* v, const AttentionShape& s,
                cudaStream_t stream);

 private:
  AttentionPath choose(const AttentionShape& s);

  AttentionPath requested_;
  Precision precision_;
  CudnnAttention cudnn_;
  std::map<std::tuple<int64_t, int, int, int, int>, AttentionPath> chosen_;
};

}  // namespace db::cuda
