// Every diagnostic declares its `diagnose` options and the datasets it writes: flags are unique
// and parse their values with a clear error, and every declared dataset is documented in
// doc/diagnostics.md (run_diagnostics refuses a dataset its diagnostic did not declare).
#define BOOST_TEST_MODULE diagnostic declarations
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "diag/diagnostics.hpp"

using namespace db;
using namespace db::diag;

BOOST_AUTO_TEST_CASE(every_diagnostic_declares_datasets_and_unique_option_flags) {
  std::set<std::string> flags, datasets;
  for (const Diagnostic& d : all_diagnostics()) {
    BOOST_TEST(!d.datasets.empty(), d.name);
    for (const std::string& name : d.datasets) BOOST_TEST(datasets.insert(name).second, name);
    for (const DiagnosticOption& o : d.options) {
      BOOST_TEST(flags.insert(o.flag).second, o.flag << " declared twice");
      BOOST_TEST(!o.help.empty(), o.flag);
      DiagSettings s;
      o.set(s, o.value(DiagSettings{}));  // the default reads back
    }
  }
  BOOST_TEST(flags.count("causal-windows"));
  BOOST_TEST(flags.count("mbpp"));
}

BOOST_AUTO_TEST_CASE(declared_options_set_their_settings_and_refuse_bad_values) {
  const auto option = [](const std::string& flag) -> const DiagnosticOption& {
    for (const Diagnostic& d : all_diagnostics())
      for (const DiagnosticOption& o : d.options)
        if (o.flag == flag) return o;
    throw Error("no option " + flag);
  };
  DiagSettings s;
  option("causal-windows").set(s, "7");
  BOOST_TEST(s.causal_windows == 7);
  option("dead-threshold").set(s, "0.1");
  BOOST_TEST(s.dead_threshold == 0.1);
  option("gsm8k").set(s, "tasks/gsm8k.jsonl");
  BOOST_TEST(s.task_files.at("gsm8k") == "tasks/gsm8k.jsonl");
  BOOST_CHECK_THROW(option("causal-windows").set(s, "0"), Error);
  BOOST_CHECK_THROW(option("causal-windows").set(s, "many"), Error);
  BOOST_CHECK_THROW(option("arc-limit").set(s, "-1"), Error);
  BOOST_CHECK_THROW(option("dead-threshold").set(s, "1.5"), Error);
  try {
    option("pruning-windows").set(s, "2.5");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("--pruning-windows") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(every_declared_dataset_is_documented) {
  std::ifstream in(std::string(DEPTHBENCH_SOURCE_DIR) + "/doc/diagnostics.md");
  std::stringstream doc;
  doc << in.rdbuf();
  for (const Diagnostic& d : all_diagnostics())
    for (const std::string& name : d.datasets) {
      // domain_nll_<task> is documented by its pattern.
      const std::string documented = name.rfind("domain_nll_", 0) == 0 ? "domain_nll_" : name;
      BOOST_TEST(doc.str().find("`" + documented) != std::string::npos, name);
    }
}

BOOST_AUTO_TEST_CASE(a_diagnostic_declares_its_interval_bounds_with_the_dataset) {
  Diagnostic d;
  d.datasets = {"causal_score"};
  BOOST_TEST(d.declares("causal_score"));
  BOOST_TEST(d.declares("causal_score_ci_low"));
  BOOST_TEST(d.declares("causal_score_ci_high"));
  BOOST_TEST(!d.declares("causal_score_extra"));
}
