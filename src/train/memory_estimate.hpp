// What a run needs in memory (host memory on the CPU, GPU memory on CUDA), estimated before
// anything is allocated, so that a model too large is refused with the numbers and what would
// fit instead of dying in std::bad_alloc or cudaMalloc.
#pragma once
#include <cstdint>
#include <string>

#include "train/run_config.hpp"

namespace db {

class Backend;

struct MemoryEstimate {
  double weights_bytes = 0;      // parameters and their gradients (fp32)
  double optimizer_bytes = 0;    // AdamW's two moments (fp32)
  double activations_bytes = 0;  // saved for the backward pass of one micro-batch, with logits
  double attention_workspace_bytes = 0;  // cuDNN's deterministic backward: bf16 dP of one call
  double reducer_scratch_bytes = 0;      // a CPU run on several ranks: the MPI sum's received parts
  double total() const {
    return weights_bytes + optimizer_bytes + activations_bytes + attention_workspace_bytes +
           reducer_scratch_bytes;
  }
};

// Per rank, at train.micro_batch sequences of train.seq_len tokens. Both backends keep fp32
// weights, gradients, AdamW moments and activations, and under bf16 storage the cores' tensors
// in bf16 and one bf16 copy of the weights; the activations count the backbone's
// saved tensors, the design's own state (HC/mHC streams, AttnRes sources and their gradients,
// MoDA's depth pools) and one chunk of LM-head logits (256 rows on the CPU, 4096 on CUDA).
// Under train.recompute = blocks one block's activations and every block's input. A bf16 CUDA
// run that may use cuDNN's attention adds its backward's workspace, B·H·T² bf16 values.
// A CPU run on ranks_per_run > 1 ranks adds the host scratch of its gradient sum in rank order
// (ops/rank_order_sum.hpp): (p − 1)/p of the fp32 gradients.
// An estimate to within tens of percent, not an allocation plan.
MemoryEstimate estimate_memory(const RunConfig& config, int ranks_per_run = 1);
// Physical memory of this machine in bytes.
double machine_memory_bytes();
// Throws db::Error naming the figures and the largest train.micro_batch that would fit when the
// estimate exceeds the memory of this rank's device of `backend` (the machine's for the CPU).
void check_memory(const RunConfig& config, const Backend& backend, int ranks_per_run = 1);
std::string format_gib(double bytes);

}  // namespace db
