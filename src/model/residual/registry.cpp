#include "model/residual/registry.hpp"

#include "core/error.hpp"

namespace db {

// One line per design; each function lives in the design's own file.
DesignInfo pre_ln_design();
DesignInfo sandwich_ln_design();
DesignInfo lns_design();
DesignInfo deepnorm_design();
DesignInfo keel_design();
DesignInfo moda_design();
DesignInfo hc_design();
DesignInfo mhc_design();
DesignInfo attnres_full_design();
DesignInfo attnres_block_design();

namespace {
std::vector<DesignInfo>& registry() {
  static std::vector<DesignInfo> designs = {
      pre_ln_design(),       sandwich_ln_design(),   lns_design(), deepnorm_design(),
      keel_design(),         moda_design(),          hc_design(),  mhc_design(),
      attnres_full_design(), attnres_block_design(),
  };
  return designs;
}
}  // namespace

const std::vector<DesignInfo>& all_designs() {
  return registry();
}

DesignRegistration::DesignRegistration(DesignInfo info) {
  for (const DesignInfo& d : registry())
    if (d.name == info.name) throw Error("design '" + info.name + "' is registered twice");
  registry().push_back(std::move(info));
}

std::string design_names() {
  std::string names;
  for (const DesignInfo& d : all_designs()) names += (names.empty() ? "" : ", ") + d.name;
  return names;
}

const DesignInfo& find_design(const std::string& name) {
  for (const DesignInfo& d : all_designs())
    if (d.name == name) return d;
  throw Error("unknown architecture '" + name + "' (valid: " + design_names() + ")");
}

std::string design_options_text(const ModelConfig& config) {
  std::string text;
  for (const DesignOption& o : find_design(config.arch).options)
    text += (text.empty() ? "" : ";") + o.key + "=" + config.option(o.key, o.default_value);
  return text;
}

}  // namespace db
