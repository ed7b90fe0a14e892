#include "ops/ops_options.hpp"

#include "core/error.hpp"

namespace db {

AttentionPath parse_attention_path(const std::string& name) {
  if (name == "auto") return AttentionPath::automatic;
  if (name == "cudnn") return AttentionPath::cudnn;
  if (name == "flash") return AttentionPath::flash;
  if (name == "reference") return AttentionPath::reference;
  throw Error("unknown attention path '" + name + "' (valid: auto, cudnn, flash, reference)");
}

CudaGraphs parse_cuda_graphs(const std::string& name) {
  if (name == "auto") return CudaGraphs::automatic;
  if (name == "on") return CudaGraphs::on;
  if (name == "off") return CudaGraphs::off;
  throw Error("unknown train.cuda_graphs value '" + name + "' (valid: auto, on, off)");
}

ActivationDtype parse_activation_dtype(const std::string& name) {
  if (name == "auto") return ActivationDtype::automatic;
  if (name == "fp32") return ActivationDtype::fp32;
  if (name == "bf16") return ActivationDtype::bf16;
  throw Error("unknown train.activation_dtype value '" + name + "' (valid: auto, fp32, bf16)");
}

bool parse_fused_kernels(const std::string& name) {
  if (name == "on") return true;
  if (name == "off") return false;
  throw Error("unknown train.fused_kernels value '" + name + "' (valid: on, off)");
}

bool parse_state_dtype(const std::string& name) {
  if (name == "fp32") return false;
  if (name == "bf16") return true;
  throw Error("unknown train.state_dtype value '" + name + "' (valid: fp32, bf16)");
}

}  // namespace db
