// Weights for `eval` and `export` from any file DepthBench writes (doc/eval.md "Weights"): a
// weight or checkpoint file (HDF5, format 2) or a safetensors export (its file or its folder).
// Hugging Face folders are read by read_hf_checkpoint (io/hf_checkpoint.hpp), chosen by --hf.
#pragma once
#include <string>

#include "io/checkpoint.hpp"

namespace db {

// The weights with their model config and training seq_len. Throws db::Error naming the path.
Checkpoint load_weights(const std::string& path);

}  // namespace db
