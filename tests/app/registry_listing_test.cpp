// `depthbench designs --json` is the registry: parsed back, every entry's name, display name,
// order, options with defaults and ranges, no-decay parameters and state match all_designs(),
// and the executable prints the same JSON; `depthbench diagnose --list` likewise lists the
// diagnostics as they declare themselves.
#define BOOST_TEST_MODULE designs listing
#define BOOST_TEST_DYN_LINK
#include "app/registry_listing.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdio>
#include <string>

#include "diag/diagnostics.hpp"
#include "model/residual/registry.hpp"
#include "util/json.hpp"

using namespace db;

namespace {

std::string text_of(const JsonValue& v, const char* key) {
  return v.find(key)->as_string(key);
}

double number_or_infinity(const JsonValue& v, const char* key, double infinity) {
  const JsonValue* n = v.find(key);
  return n->is_null() ? infinity : n->as_number(key);
}

std::string command_output(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  BOOST_TEST_REQUIRE(pipe);
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  BOOST_TEST(pclose(pipe) == 0);
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(designs_json_lists_every_registry_entry_as_it_describes_itself) {
  const JsonValue root = parse_json(app::designs_json());
  BOOST_TEST(root.find("schema")->as_number() == 1);
  const JsonArray& designs = root.find("designs")->as_array();
  BOOST_TEST_REQUIRE(designs.size() == all_designs().size());
  size_t i = 0;
  for (const DesignInfo& d : all_designs()) {
    const JsonValue& e = designs[i];
    BOOST_TEST_CONTEXT(d.name) {
      BOOST_TEST(text_of(e, "name") == d.name);
      BOOST_TEST(text_of(e, "title") == d.title);
      BOOST_TEST(text_of(e, "summary") == d.summary);
      BOOST_TEST(e.find("order")->as_number() == double(i));
      const JsonArray& options = e.find("options")->as_array();
      BOOST_TEST_REQUIRE(options.size() == d.options.size());
      for (size_t k = 0; k < options.size(); ++k) {
        const DesignOption& o = d.options[k];
        const JsonValue& j = options[k];
        BOOST_TEST(text_of(j, "key") == o.key);
        BOOST_TEST(text_of(j, "default") == o.default_value);
        BOOST_TEST(text_of(j, "kind") == kind_name(o.values.kind));
        BOOST_TEST(number_or_infinity(j, "min", -INFINITY) == o.values.min);
        BOOST_TEST(number_or_infinity(j, "max", INFINITY) == o.values.max);
        BOOST_TEST(j.find("min_exclusive")->as_bool() == o.values.min_exclusive);
        BOOST_TEST(text_of(j, "values") == describe_values(o.values));
        BOOST_TEST(j.find("words")->as_array().size() == o.values.words.size());
      }
      const JsonArray& no_decay = e.find("no_decay")->as_array();
      BOOST_TEST_REQUIRE(no_decay.size() == d.no_decay.size());
      for (size_t k = 0; k < no_decay.size(); ++k)
        BOOST_TEST(no_decay[k].as_string() == d.no_decay[k]);
      ModelConfig shape;
      shape.arch = d.name;
      shape.d_model = app::kListingDModel;
      shape.n_head = app::kListingHeads;
      BOOST_TEST(e.find("state_values_per_token_block")->as_number() ==
                 d.state_values_per_token(shape));
    }
    ++i;
  }
}

BOOST_AUTO_TEST_CASE(the_executable_prints_the_same_json_and_a_text_listing) {
  const std::string binary = std::string(DEPTHBENCH_BINARY_DIR) + "/depthbench";
  BOOST_TEST(command_output(binary + " designs --json") == app::designs_json());
  const std::string text = command_output(binary + " designs");
  for (const DesignInfo& d : all_designs()) {
    BOOST_TEST(text.find(d.name + " (" + d.title + ")") != std::string::npos, d.name);
    for (const DesignOption& o : d.options)
      BOOST_TEST(text.find("model." + o.key) != std::string::npos, o.key);
  }
}

BOOST_AUTO_TEST_CASE(diagnose_list_prints_every_diagnostic_with_its_options_and_datasets) {
  const JsonValue root = parse_json(app::diagnostics_json());
  const JsonArray& listed = root.find("diagnostics")->as_array();
  const std::vector<diag::Diagnostic>& all = diag::all_diagnostics();
  BOOST_TEST_REQUIRE(listed.size() == all.size());
  const diag::DiagSettings defaults;
  for (size_t i = 0; i < all.size(); ++i) {
    const diag::Diagnostic& d = all[i];
    const JsonValue& e = listed[i];
    BOOST_TEST_CONTEXT(d.name) {
      BOOST_TEST(text_of(e, "name") == d.name);
      BOOST_TEST(text_of(e, "summary") == d.summary);
      const JsonArray& options = e.find("options")->as_array();
      BOOST_TEST_REQUIRE(options.size() == d.options.size());
      for (size_t k = 0; k < options.size(); ++k) {
        BOOST_TEST(text_of(options[k], "flag") == d.options[k].flag);
        BOOST_TEST(text_of(options[k], "default") == d.options[k].value(defaults));
      }
      const JsonArray& datasets = e.find("datasets")->as_array();
      BOOST_TEST_REQUIRE(datasets.size() == d.datasets.size());
      for (size_t k = 0; k < datasets.size(); ++k)
        BOOST_TEST(datasets[k].as_string() == d.datasets[k]);
    }
  }
  const std::string binary = std::string(DEPTHBENCH_BINARY_DIR) + "/depthbench";
  BOOST_TEST(command_output(binary + " diagnose --list --json") == app::diagnostics_json());
  BOOST_TEST(command_output(binary + " diagnose --list") == app::diagnostics_text());
}
