// How a backend's ops compute, chosen per run (doc/config.md, doc/cuda.md): the arithmetic of
// the matrix products (train.precision) and the attention path (train.attention). One struct, so
// that a new switch reaches Backend::make_float_ops without a new argument on every caller.
// A backend ignores what it does not have: the CPU computes in fp32 with its one attention.
#pragma once
#include <string>

#include "core/precision.hpp"

namespace db {

// train.attention. The CUDA backend: reference = the fp32 fused kernel (ops/cuda/attention.hpp,
// the test oracle); cudnn = cuDNN's fused SDPA in bf16; flash = our bf16 tensor-core kernel;
// automatic = cudnn when it can run the shape, else flash, else reference (reference whenever
// the precision is fp32, so that parity runs stay fp32).
enum class AttentionPath { automatic, cudnn, flash, reference };
// "auto" | "cudnn" | "flash" | "reference", else db::Error naming the valid values.
AttentionPath parse_attention_path(const std::string& name);
// Inline: the CUDA library names paths too and does not link the library this is part of.
inline const char* attention_path_name(AttentionPath path) {
  switch (path) {
    case AttentionPath::automatic:
      return "auto";
    case AttentionPath::cudnn:
      return "cudnn";
    case AttentionPath::flash:
      return "flash";
    case AttentionPath::reference:
      return "reference";
  }
  return "?";
}
inline const char* attention_path_choices() {
  return "auto | cudnn | flash | reference";
}

struct OpsOptions {
  Precision precision = Precision::fp32;
  AttentionPath attention = AttentionPath::automatic;
};

}  // namespace db
