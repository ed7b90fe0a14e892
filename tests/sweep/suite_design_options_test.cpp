// Design options in a suite's [recipe] are checked against the ranges of the designs' registry
// entries when the suite is read: a value out of range is refused, naming the key and range.
#define BOOST_TEST_MODULE suite design options
#include <boost/test/included/unit_test.hpp>
#include <string>

#include "core/error.hpp"
#include "model/residual/registry.hpp"
#include "sweep/suite.hpp"

using namespace db;
using namespace db::sweep;

namespace {

std::string suite_with(const std::string& recipe_line) {
  return "[suite]\nname = t\ndesigns = hc, mhc, attnres_block, deepnorm, moda\n"
         "shapes = 2x64\nheads = 4\n[learning_rates]\ndefault = 1e-3\n[recipe]\n"
         "train.steps = 10\n" +
         recipe_line + "\n";
}

// The error of parsing the suite, "" when it is accepted.
std::string error_of(const std::string& recipe_line) {
  try {
    parse_suite_text(suite_with(recipe_line), "options.ini");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(suite_rejects_design_options_outside_the_registry_ranges) {
  const auto rejected = [](const std::string& line, const std::string& key,
                           const std::string& range) {
    const std::string message = error_of(line);
    BOOST_TEST_CONTEXT(line << " -> " << message) {
      BOOST_TEST(message.find("options.ini") != std::string::npos);
      BOOST_TEST(message.find("model." + key) != std::string::npos);
      BOOST_TEST(message.find(range) != std::string::npos);
    }
  };
  rejected("model.hc_streams = 0", "hc_streams", "integer ≥ 1");
  rejected("model.hc_streams = 2.5", "hc_streams", "integer ≥ 1");
  rejected("model.hc_streams = 4x", "hc_streams", "integer ≥ 1");
  rejected("model.mhc_sinkhorn_iters = -1", "mhc_sinkhorn_iters", "integer ≥ 0");
  rejected("model.mhc_sinkhorn_eps = -1e-6", "mhc_sinkhorn_eps", "real ≥ 0");
  rejected("model.attnres_blocks = 0", "attnres_blocks", "integer ≥ 1");
  rejected("model.deepnorm_alpha = 0", "deepnorm_alpha", "real > 0 or auto");
  rejected("model.deepnorm_norm = batchnorm", "deepnorm_norm", "layernorm | rmsnorm");
  rejected("model.moda_post_norm = maybe", "moda_post_norm", "true | false");
}

BOOST_AUTO_TEST_CASE(suite_accepts_design_options_inside_the_registry_ranges) {
  for (const std::string line :
       {"model.hc_streams = 2", "model.mhc_sinkhorn_iters = 0", "model.mhc_sinkhorn_eps = 0",
        "model.attnres_blocks = 3", "model.attnres_block_size = 2", "model.deepnorm_alpha = auto",
        "model.deepnorm_alpha = 1.5", "model.deepnorm_norm = rmsnorm", "model.moda_post_norm = 1"})
    BOOST_TEST(error_of(line).empty(), line << " -> " << error_of(line));
}

BOOST_AUTO_TEST_CASE(the_range_in_the_message_is_the_registry_entrys_own) {
  // The registry, not the suite parser, decides: the message quotes the entry's description.
  const DesignInfo& hc = find_design("hc");
  const DesignOption& streams = hc.options.front();
  BOOST_TEST_REQUIRE(streams.key == "hc_streams");
  BOOST_TEST(error_of("model.hc_streams = 0").find(describe_values(streams.values)) !=
             std::string::npos);
}
