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

std::deque<DesignInfo>& registry() {
  static std::deque<DesignInfo> designs = {
      pre_ln_design(),       sandwich_ln_design(),   lns_design(), deepnorm_design(),
      keel_design(),         moda_design(),          hc_design(),  mhc_design(),
      attnres_full_design(), attnres_block_design(),
  };
  return designs;
}

// "blocks.3.attn_hc.static_alpha" → "static_alpha".
std::string last_component(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

}  // namespace

const std::deque<DesignInfo>& all_designs() {
  return registry();
}

bool register_design(DesignInfo design) {
  DB_REQUIRE(!design.name.empty() && design.declare && design.make_float && design.make_double,
             "a registered design needs a name, declare and make functions");
  for (const DesignInfo& d : registry())
    DB_REQUIRE(d.name != design.name, "design '" + design.name + "' is registered twice");
  if (design.title.empty()) design.title = design.name;
  if (!design.extra_flops_per_token)
    design.extra_flops_per_token = [](const ModelConfig&, int) { return 0.0; };
  registry().push_back(std::move(design));
  return true;
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

int design_order(const std::string& name) {
  const DesignInfo& design = find_design(name);
  int order = 0;
  for (const DesignInfo& d : all_designs()) {
    if (&d == &design) break;
    ++order;
  }
  return order;
}

std::string design_options_text(const ModelConfig& config) {
  std::string text;
  for (const DesignOption& o : find_design(config.arch).options)
    text += (text.empty() ? "" : ";") + o.key + "=" + config.option(o.key, o.default_value);
  return text;
}

const DesignOption* find_design_option(const std::string& key) {
  for (const DesignInfo& d : all_designs())
    for (const DesignOption& o : d.options)
      if (o.key == key) return &o;
  return nullptr;
}

void declare_design_parameters(const DesignInfo& design, ParameterLayout& layout,
                               const ModelConfig& config) {
  design.declare(layout, config);
  for (const std::string& name : design.no_decay) {
    bool found = false;
    for (const ParameterSpec& spec : layout.specs())
      if (last_component(spec.name) == name) {
        layout.set_weight_decay(spec.name, false);
        found = true;
      }
    DB_REQUIRE(found, "design " + design.name + ": no_decay names '" + name +
                          "', which no parameter of the design ends in");
  }
}

DesignRegistration::DesignRegistration(DesignInfo info) { register_design(std::move(info)); }

}  // namespace db
