// The named residual designs. Each entry describes itself (design.hpp: DesignInfo); everything
// above the model asks the entry. The build registers every design file of src/model/residual/
// (src/CMakeLists.txt); a design defined elsewhere (a test) registers with register_design.
#pragma once
#include <deque>
#include <string>

#include "model/residual/design.hpp"

namespace db {

// The paper's designs in its order (DesignInfo::section), then this build's other design files
// by name, then designs registered later. A deque, so that
// references returned by find_design stay valid when a design is registered.
const std::deque<DesignInfo>& all_designs();
// Adds a design (e.g. one defined in a test); throws db::Error when the name is taken.
// Returns true so that a file can register at static initialisation:
//   const bool registered = register_design(my_design());
bool register_design(DesignInfo design);
// The same, for a file that registers at static initialisation:
//   static const DesignRegistration registered{my_design()};
// Its file must be compiled like the designs of this folder when it launches functors
// (CMake: depthbench_device_sources).
struct DesignRegistration {
  explicit DesignRegistration(DesignInfo info);
};
// Throws db::Error listing the valid names when the name is unknown.
const DesignInfo& find_design(const std::string& name);
// The position of the design in the registry (0 for pre_ln): the order of tables and figures.
int design_order(const std::string& name);
std::string design_names();  // "pre_ln, sandwich_ln, ..."
// The designs whose entry has rounds_state (train.state_dtype = bf16): "hc, mhc, ...".
std::string state_rounding_design_names();
// The design's options with their values (defaults included): "key=value;key=value", empty for
// designs without options. Recorded in run, weight and checkpoint files.
std::string design_options_text(const ModelConfig& config);
// The option of that key of any design, or null.
const DesignOption* find_design_option(const std::string& key);
// The design's parameters (its declare) with the weight decay its entry gives: off for the
// parameters named in no_decay, each of which must exist.
void declare_design_parameters(const DesignInfo& design, ParameterLayout& layout,
                               const ModelConfig& config);

}  // namespace db
