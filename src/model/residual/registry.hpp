// The named residual designs: a design is one registered entry, found by its name.
#pragma once
#include <string>
#include <vector>

#include "model/residual/design.hpp"

namespace db {

const std::vector<DesignInfo>& all_designs();
// Throws db::Error listing the valid names when the name is unknown.
const DesignInfo& find_design(const std::string& name);
std::string design_names();  // "pre_ln, sandwich_ln, ..."
// The design's options with their values (defaults included): "key=value;key=value", empty for
// designs without options. Recorded in run, weight and checkpoint files.
std::string design_options_text(const ModelConfig& config);

}  // namespace db
