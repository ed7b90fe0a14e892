// How a backend's ops compute, chosen per run (doc/config.md, doc/cuda.md): the arithmetic of
// the matrix products (train.precision), the attention path (train.attention), whether a
// micro-batch is replayed from a CUDA graph (train.cuda_graphs), what the sublayer cores
// store their activations in (train.activation_dtype) and whether fused kernels run
// (train.fused_kernels; these two read by the model). One struct, so that a
// new switch reaches Backend::make_float_ops without a new argument on every caller. A backend
// ignores what it does not have: the CPU computes in fp32 with its one attention.
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

// train.cuda_graphs. The CUDA backend records a micro-batch's forward and backward as a graph per
// shape and replays it (ops/cuda/cuda_graph.hpp): automatic = try, and run eagerly (one stdout
// line) when capture fails; on = a failed capture is an error; off = always eager.
enum class CudaGraphs { automatic, on, off };
// "auto" | "on" | "off", else db::Error naming the valid values.
CudaGraphs parse_cuda_graphs(const std::string& name);
inline const char* cuda_graphs_choices() {
  return "auto | on | off";
}

// train.activation_dtype: what the sublayer cores store their activations in (storage_ops.hpp):
// fp32 = the model type; bf16 = bf16 with fp32 arithmetic, on any backend (the CPU too);
// automatic = bf16 on a GPU backend in bf16 precision, else fp32.
enum class ActivationDtype { automatic, fp32, bf16 };
// "auto" | "fp32" | "bf16", else db::Error naming the valid values.
ActivationDtype parse_activation_dtype(const std::string& name);
inline const char* activation_dtype_choices() {
  return "auto | fp32 | bf16";
}

// train.fused_kernels, read by the model: on = the memory-bound passes it has a fused form for
// run as one (the residual add with the norm after it, the HC/mHC combine with its norm and
// their backward passes, the AttnRes depth softmax in one read of its sources, QK-norm with
// RoPE); off = the separate ops, the same math (on the CPU the same bits, HC/mHC's backward and
// AttnRes to rounding), for the lever table and to set a fused kernel aside. "on" | "off", else
// db::Error naming the valid values.
bool parse_fused_kernels(const std::string& name);

// train.state_dtype, read by the model: fp32 = the designs' own state in the model type; bf16 =
// HC/mHC's streams, AttnRes's sources and their gradients rounded to bf16 wherever they pass from
// one sublayer to the next (model/residual/state_rounding.hpp), arithmetic unchanged. For now the
// rounded values stay in buffers of the model type: it measures what bf16 state does to training,
// it does not yet save memory or time. "fp32" | "bf16" (true), else db::Error.
bool parse_state_dtype(const std::string& name);
inline const char* state_dtype_choices() {
  return "fp32 | bf16";
}

struct OpsOptions {
  Precision precision = Precision::fp32;
  AttentionPath attention = AttentionPath::automatic;
  CudaGraphs cuda_graphs = CudaGraphs::automatic;
  ActivationDtype activation_dtype = ActivationDtype::automatic;
  bool fused_kernels = true;
  bool bf16_state = false;
};

// Whether a model stores its cores' activations in bf16, on a GPU backend's ops or not (and the
// GPU's bf16 head its logits). Inline, as above: the CUDA library asks too.
inline bool stores_bf16(const OpsOptions& options, bool gpu) {
  switch (options.activation_dtype) {
    case ActivationDtype::fp32:
      return false;
    case ActivationDtype::bf16:
      return true;
    case ActivationDtype::automatic:
      break;
  }
  return gpu && options.precision == Precision::bf16;
}

}  // namespace db
