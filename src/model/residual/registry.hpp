// The named residual designs (STYLE.md: "a registry of named residual designs").
#pragma once
#include <string>
#include <vector>

#include "model/residual/design.hpp"

namespace db {

const std::vector<DesignInfo>& all_designs();

// Adds a design defined outside registry.cpp (a test file, a plugin) at static initialisation:
//   static const DesignRegistration registered{my_design()};
// Its file must be compiled like the designs of this folder when it launches functors
// (CMake: depthbench_device_sources). A duplicate name is a db::Error.
struct DesignRegistration {
  explicit DesignRegistration(DesignInfo info);
};
// Throws db::Error listing the valid names when the name is unknown.
const DesignInfo& find_design(const std::string& name);
std::string design_names();  // "pre_ln, sandwich_ln, ..."
// The design's options with their values (defaults included): "key=value;key=value", empty for
// designs without options. Recorded in run, weight and checkpoint files.
std::string design_options_text(const ModelConfig& config);

}  // namespace db
