// The registry entries describe their designs: display names, option ranges that admit their
// own defaults, no-decay parameters applied from the entry (and checked against the layout),
// and designs registered later (a test design here) found like the ten of the paper.
#define BOOST_TEST_MODULE design registry
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <set>
#include <string>

#include "core/error.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"

using namespace db;

namespace {

ModelConfig tiny(const std::string& arch) {
  ModelConfig c;
  c.arch = arch;
  c.n_layer = 2;
  c.d_model = 16;
  c.n_head = 2;
  c.vocab_size = 32;
  return c;
}

// The last component of every parameter without weight decay.
std::set<std::string> no_decay_names(const ParameterLayout& layout) {
  std::set<std::string> names;
  for (const ParameterSpec& s : layout.specs())
    if (!s.weight_decay) names.insert(s.name.substr(s.name.rfind('.') + 1));
  return names;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_design_has_a_distinct_title_and_the_paper_order) {
  const std::vector<std::string> paper = {"pre_ln",       "sandwich_ln",  "lns", "deepnorm",
                                          "keel",         "moda",         "hc",  "mhc",
                                          "attnres_full", "attnres_block"};
  std::set<std::string> titles;
  for (size_t i = 0; i < paper.size(); ++i) {
    const DesignInfo& d = find_design(paper[i]);
    BOOST_TEST(design_order(paper[i]) == int(i));
    BOOST_TEST(!d.title.empty());
    BOOST_TEST(titles.insert(d.title).second, d.title << " is used twice");
  }
  BOOST_TEST(find_design("attnres_block").title == "Block AttnRes");
  BOOST_TEST(find_design("mhc").title == "mHC");
}

BOOST_AUTO_TEST_CASE(every_option_default_is_inside_its_own_declared_range) {
  for (const DesignInfo& d : all_designs())
    for (const DesignOption& o : d.options) {
      BOOST_TEST(option_value_problem(o, o.default_value).empty(), d.name << "." << o.key);
      BOOST_TEST(find_design_option(o.key) == &o);
    }
}

BOOST_AUTO_TEST_CASE(option_ranges_accept_and_refuse_by_kind) {
  const DesignOption streams{"n", "4", "", OptionValues::integer_at_least(1)};
  BOOST_TEST(option_value_problem(streams, "1").empty());
  BOOST_TEST(!option_value_problem(streams, "0").empty());
  BOOST_TEST(!option_value_problem(streams, "1.5").empty());
  BOOST_TEST(!option_value_problem(streams, "2 ").empty());
  BOOST_TEST(!option_value_problem(streams, "inf").empty());
  const DesignOption alpha{"a", "auto", "", OptionValues::real_above(0, {"auto"})};
  BOOST_TEST(option_value_problem(alpha, "auto").empty());
  BOOST_TEST(option_value_problem(alpha, "1e-9").empty());
  BOOST_TEST(!option_value_problem(alpha, "0").empty());
  BOOST_TEST(!option_value_problem(alpha, "automatic").empty());
  const DesignOption flag{"f", "false", "", OptionValues::boolean()};
  for (const char* ok : {"true", "false", "1", "0"})
    BOOST_TEST(option_value_problem(flag, ok).empty());
  BOOST_TEST(!option_value_problem(flag, "yes").empty());
  const DesignOption any{"t", "", ""};  // an option that declares no range takes any text
  BOOST_TEST(option_value_problem(any, "whatever").empty());
  BOOST_TEST(describe_values(alpha.values) == "real > 0 or auto");
  BOOST_TEST(describe_values(streams.values) == "integer ≥ 1");
}

BOOST_AUTO_TEST_CASE(no_decay_parameters_are_exactly_those_the_entries_name) {
  for (const DesignInfo& d : all_designs()) {
    const std::set<std::string> listed(d.no_decay.begin(), d.no_decay.end());
    BOOST_TEST((no_decay_names(build_layout(tiny(d.name))) == listed), d.name);
  }
  BOOST_TEST((
      std::set<std::string>(find_design("hc").no_decay.begin(), find_design("hc").no_decay.end()) ==
      std::set<std::string>{"static_alpha", "static_beta"}));
  BOOST_TEST((std::set<std::string>(find_design("mhc").no_decay.begin(),
                                    find_design("mhc").no_decay.end()) ==
              std::set<std::string>{"bias", "gates"}));
}

BOOST_AUTO_TEST_CASE(a_registered_design_is_found_listed_and_its_no_decay_applied) {
  DesignInfo d = find_design("pre_ln");
  d.name = "test_pre_ln_frozen_norms";
  d.title = "Test design";
  d.no_decay = {"final_norm"};
  BOOST_TEST(register_design(d));
  BOOST_TEST(find_design(d.name).title == "Test design");
  BOOST_TEST(design_order(d.name) == int(all_designs().size()) - 1);
  BOOST_TEST(design_names().find(d.name) != std::string::npos);
  const ParameterLayout layout = build_layout(tiny(d.name));
  BOOST_TEST(!layout.spec(layout.id("final_norm")).weight_decay);
  BOOST_TEST(layout.spec(layout.id("blocks.0.wq")).weight_decay);
  BOOST_CHECK_THROW(register_design(d), Error);  // a name is registered once
}

BOOST_AUTO_TEST_CASE(a_no_decay_name_that_matches_no_parameter_is_an_error) {
  DesignInfo d = find_design("pre_ln");
  d.name = "test_pre_ln_typo";
  d.no_decay = {"static_alhpa"};
  register_design(d);
  try {
    build_layout(tiny(d.name));
    BOOST_FAIL("a misspelt no_decay name was accepted");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("static_alhpa") != std::string::npos);
  }
}
