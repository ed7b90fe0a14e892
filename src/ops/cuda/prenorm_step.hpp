// A compact, self-contained Pre-LN training step on the GPU (spec §0–§1) for the throughput
// benchmark: the same math as src/model (embedding → L × [x + Attn(N(x)); h + FFN(N(h))] →
// final RMSNorm → untied LM head with fused cross-entropy → backward → global-norm clipping →
// AdamW), built only from the ops of this folder. bf16 activations and GEMM inputs, fp32
// residual stream, fp32 master weights, gradients and optimizer state, fp32 loss.
// It is not the trainer: the model-level CUDA integration (all ten designs behind
// ResidualDesign) is separate work (doc/cuda.md "Status").
#pragma once
#include <cstdint>
#include <memory>

#include "ops/cuda/types.hpp"

namespace db::cuda {

struct PrenormShape {
  int n_layer = 4, d_model = 256, n_head = 16, n_kv_head = 16, ff = 688, vocab = 50304;
  int64_t batch = 4;
  int seq_len = 256;
  double norm_eps = 1e-6, rope_theta = 10000.0, init_std = 0.02;
  double learning_rate = 1e-3, beta1 = 0.9, beta2 = 0.95, adam_eps = 1e-8;
  double weight_decay = 0.1, grad_clip = 1.0;
};

class PrenormStep {
 public:
  PrenormStep(const PrenormShape& shape, uint64_t seed);
  ~PrenormStep();
  PrenormStep(const PrenormStep&) = delete;
  PrenormStep& operator=(const PrenormStep&) = delete;

  // One optimizer step on host tokens [batch, seq_len] (next-token targets, the last position
  // of each window has none). Returns the mean loss (synchronises once, for the loss).
  double step(const int32_t* tokens);

  int64_t parameter_count() const;
  // Bytes of parameters, gradients, optimizer state and saved activations allocated.
  size_t allocated_bytes() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace db::cuda
