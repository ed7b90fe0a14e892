// train.fused_kernels (ops_options.hpp): parsed and checked when the config is read (a bad value
// is one line naming the valid ones), carried to the model in OpsOptions, outside the run id (the
// same math in fewer kernels). What the model does with it: model.fused_residual_norm_test.
#define BOOST_TEST_MODULE fused_kernels_switch
#include <boost/test/unit_test.hpp>

#include "core/error.hpp"
#include "model/model.hpp"
#include "ops/backend.hpp"
#include "train/run_config.hpp"
#include "train/run_metadata.hpp"

using namespace db;

namespace {
RunConfig with_fused_kernels(const std::string& value) {
  return parse_run_config_text("[train]\nfused_kernels = " + value + "\n");
}
}  // namespace

BOOST_AUTO_TEST_CASE(every_value_parses_and_reaches_the_model) {
  BOOST_TEST(RunConfig().fused_kernels == "on");
  BOOST_TEST(RunConfig().ops_options().fused_kernels);
  BOOST_TEST(with_fused_kernels("on").ops_options().fused_kernels);
  BOOST_TEST(!with_fused_kernels("off").ops_options().fused_kernels);
  for (const char* value : {"on", "off"}) {
    const RunConfig config = with_fused_kernels(value);
    BOOST_TEST(config.to_ini().find(std::string("fused_kernels = ") + value + "\n") !=
               std::string::npos);
    Model<float> model(config.model, find_backend("cpu"), config.ops_options());
    BOOST_TEST(model.backbone().fused_kernels() == (std::string(value) == "on"));
  }
}

BOOST_AUTO_TEST_CASE(an_unknown_value_is_one_line_naming_the_valid_ones) {
  try {
    with_fused_kernels("auto");
    BOOST_FAIL("train.fused_kernels = auto was accepted");
  } catch (const Error& e) {
    const std::string message = e.what();
    BOOST_TEST_MESSAGE(message);
    BOOST_TEST(message.find("train.fused_kernels") != std::string::npos);
    BOOST_TEST(message.find("'auto'") != std::string::npos);
    BOOST_TEST(message.find("on, off") != std::string::npos);
    BOOST_TEST(message.find('\n') == std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(the_value_does_not_change_the_run_id) {
  BOOST_TEST(run_id(with_fused_kernels("on")) == run_id(with_fused_kernels("off")));
  BOOST_TEST(run_id(with_fused_kernels("on")) == run_id(RunConfig()));
  BOOST_TEST(result_keys(with_fused_kernels("off").to_ini()).count("train.fused_kernels") == 0u);
}
