// train.state_dtype, what HC/mHC's streams and AttnRes's sources are rounded to between
// sublayers (doc/performance.md, "bf16 state, measured first"): parsed when the config is read (a
// bad value is one line naming the valid ones) and carried to the model in OpsOptions. bf16 is
// part of the run id (another computation); the default fp32 is not, so the runs made before the
// key existed keep their ids.
#define BOOST_TEST_MODULE state_dtype_switch
#include <boost/test/unit_test.hpp>

#include "core/error.hpp"
#include "ops/ops_options.hpp"
#include "train/run_config.hpp"
#include "train/run_metadata.hpp"

using namespace db;

namespace {
RunConfig with_state_dtype(const std::string& value) {
  return parse_run_config_text("[train]\nstate_dtype = " + value + "\n");
}
}  // namespace

BOOST_AUTO_TEST_CASE(both_values_parse_and_reach_the_ops_options) {
  BOOST_TEST(RunConfig().state_dtype == "fp32");
  BOOST_TEST(!RunConfig().ops_options().bf16_state);
  BOOST_TEST(!with_state_dtype("fp32").ops_options().bf16_state);
  BOOST_TEST(with_state_dtype("bf16").ops_options().bf16_state);
  BOOST_TEST(with_state_dtype("bf16").to_ini().find("state_dtype = bf16\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_unknown_value_is_one_line_naming_the_valid_ones) {
  try {
    with_state_dtype("fp16");
    BOOST_FAIL("train.state_dtype = fp16 was accepted");
  } catch (const Error& e) {
    const std::string message = e.what();
    BOOST_TEST(message.find("train.state_dtype") != std::string::npos);
    BOOST_TEST(message.find("'fp16'") != std::string::npos);
    BOOST_TEST(message.find("fp32, bf16") != std::string::npos);
    BOOST_TEST(message.find('\n') == std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(bf16_is_part_of_the_run_id_and_fp32_is_not) {
  BOOST_TEST(run_id(with_state_dtype("fp32")) == run_id(RunConfig()));
  BOOST_TEST(run_id(with_state_dtype("bf16")) != run_id(RunConfig()));
  BOOST_TEST(result_keys(RunConfig().to_ini()).count("train.state_dtype") == 0u);
  BOOST_TEST(result_keys(with_state_dtype("bf16").to_ini()).at("train.state_dtype") == "bf16");
}
