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

const char* attention_path_name(AttentionPath path) {
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

CudaGraphs parse_cuda_graphs(const std::string& name) {
  if (name == "auto") return CudaGraphs::automatic;
  if (name == "on") return CudaGraphs::on;
  if (name == "off") return CudaGraphs::off;
  throw Error("unknown train.cuda_graphs value '" + name + "' (valid: auto, on, off)");
}

}  // namespace db
