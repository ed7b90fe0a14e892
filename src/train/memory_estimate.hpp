// What a CPU run needs in memory, estimated before anything is allocated, so that a model too
// large for the machine is refused with the numbers instead of dying in std::bad_alloc.
#pragma once
#include <cstdint>
#include <string>

#include "train/run_config.hpp"

namespace db {

struct MemoryEstimate {
  double weights_bytes = 0;      // parameters and their gradients (fp32)
  double optimizer_bytes = 0;    // AdamW's two moments (fp32)
  double activations_bytes = 0;  // saved for the backward pass of one micro-batch, with logits
  double total() const { return weights_bytes + optimizer_bytes + activations_bytes; }
};

// Per rank, at train.micro_batch sequences of train.seq_len tokens, for the run's backend: fp32
// everywhere on the CPU; on CUDA the planned bf16 mixed precision (fp32 master weights, gradients
// and AdamW moments plus a bf16 copy of the weights, bf16 activations, fp32 logits). Design
// extras (HC streams, AttnRes depth keys) are not counted: treat the figure as a lower bound.
MemoryEstimate estimate_memory(const RunConfig& config);
// Physical memory of this machine in bytes.
double machine_memory_bytes();
// Throws db::Error naming both figures when the estimate exceeds this machine's memory.
void check_memory(const RunConfig& config);
std::string format_gib(double bytes);

}  // namespace db
