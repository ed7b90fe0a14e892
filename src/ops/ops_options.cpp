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

}  // namespace db
