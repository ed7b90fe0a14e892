#include "model/residual/registry.hpp"

#include <algorithm>
#include <vector>

#include "core/error.hpp"

namespace db {

// Every design file of this build, found by CMake (design_list.cpp.in, generated).
std::vector<DesignInfo> designs_of_this_build();

namespace {

// Checks an entry and fills its defaults.
DesignInfo completed(DesignInfo design) {
  DB_REQUIRE(!design.name.empty() && design.declare && design.make_float && design.make_double,
             "a registered design needs a name, declare and make functions (make_design_info)");
  if (design.title.empty()) design.title = design.name;
  if (!design.extra_flops_per_token)
    design.extra_flops_per_token = [](const ModelConfig&, int) { return 0.0; };
  return design;
}

void require_new_name(const std::deque<DesignInfo>& designs, const std::string& name) {
  for (const DesignInfo& d : designs)
    DB_REQUIRE(d.name != name, "design '" + name + "' is registered twice");
}

// The paper's designs by their section (§1..§10), then the others of this build by name.
bool listed_before(const DesignInfo& a, const DesignInfo& b) {
  const bool a_paper = a.section > 0, b_paper = b.section > 0;
  if (a_paper != b_paper) return a_paper;
  if (a.section != b.section) return a.section < b.section;
  return a.name < b.name;
}

std::deque<DesignInfo>& registry() {
  static std::deque<DesignInfo> designs = [] {
    std::vector<DesignInfo> found = designs_of_this_build();
    std::sort(found.begin(), found.end(), listed_before);
    std::deque<DesignInfo> sorted;
    for (DesignInfo& d : found) {
      require_new_name(sorted, d.name);
      sorted.push_back(completed(std::move(d)));
    }
    return sorted;
  }();
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
  design = completed(std::move(design));
  require_new_name(registry(), design.name);
  registry().push_back(std::move(design));
  return true;
}

std::string design_names() {
  std::string names;
  for (const DesignInfo& d : all_designs()) names += (names.empty() ? "" : ", ") + d.name;
  return names;
}

std::string state_rounding_design_names() {
  std::string names;
  for (const DesignInfo& d : all_designs())
    if (d.rounds_state) names += (names.empty() ? "" : ", ") + d.name;
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

DesignRegistration::DesignRegistration(DesignInfo info) {
  register_design(std::move(info));
}

}  // namespace db
