// `depthbench export --format safetensors` (doc/export.md): every tensor of any design under its
// own name (doc/parameters.md) in OUT/model.safetensors, the model fields (io/model_fields.hpp)
// in its `__metadata__` and again, typed, in OUT/config.json. Reading it back gives the same
// weights bit for bit.
#pragma once
#include <string>

#include "io/checkpoint.hpp"

namespace db {

inline constexpr const char* kSafetensorsWeightsFormat = "depthbench-weights";

// Writes OUT/model.safetensors and OUT/config.json (OUT is created).
void write_safetensors_weights(const std::string& out_dir, const Checkpoint& weights);

// Reads an export: its model.safetensors or the folder holding it. Throws db::Error naming the
// file when it is not a DepthBench export or does not match its own config.
Checkpoint read_safetensors_weights(const std::string& path);

}  // namespace db
