// train.activation_dtype, what the attention and FFN cores store (doc/performance.md, "bf16
// activation storage"): parsed when the config is read (a bad value is one line naming the valid
// ones) and carried to the model in OpsOptions. An explicit value is part of the run id (bf16
// storage rounds, so it is another experiment); the default `auto` is not, so the runs made
// before the key existed keep their ids.
#define BOOST_TEST_MODULE activation_dtype_switch
#include <boost/test/unit_test.hpp>

#include "core/error.hpp"
#include "ops/ops_options.hpp"
#include "train/run_config.hpp"
#include "train/run_metadata.hpp"

using namespace db;

namespace {
RunConfig with_activation_dtype(const std::string& value) {
  return parse_run_config_text("[train]\nactivation_dtype = " + value + "\n");
}
}  // namespace

BOOST_AUTO_TEST_CASE(every_value_parses_and_reaches_the_ops_options) {
  BOOST_TEST(RunConfig().activation_dtype == "auto");
  BOOST_TEST((RunConfig().ops_options().activation_dtype == ActivationDtype::automatic));
  BOOST_TEST(
      (with_activation_dtype("fp32").ops_options().activation_dtype == ActivationDtype::fp32));
  BOOST_TEST(
      (with_activation_dtype("bf16").ops_options().activation_dtype == ActivationDtype::bf16));
  for (const char* value : {"auto", "fp32", "bf16"})
    BOOST_TEST(with_activation_dtype(value).to_ini().find(std::string("activation_dtype = ") +
                                                          value + "\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_unknown_value_is_one_line_naming_the_valid_ones) {
  try {
    with_activation_dtype("fp16");
    BOOST_FAIL("train.activation_dtype = fp16 was accepted");
  } catch (const Error& e) {
    const std::string message = e.what();
    BOOST_TEST_MESSAGE(message);
    BOOST_TEST(message.find("train.activation_dtype") != std::string::npos);
    BOOST_TEST(message.find("'fp16'") != std::string::npos);
    BOOST_TEST(message.find("auto, fp32, bf16") != std::string::npos);
    BOOST_TEST(message.find('\n') == std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(an_explicit_value_is_part_of_the_run_id_and_auto_is_not) {
  BOOST_TEST(run_id(with_activation_dtype("auto")) == run_id(RunConfig()));
  BOOST_TEST(run_id(with_activation_dtype("bf16")) != run_id(RunConfig()));
  BOOST_TEST(run_id(with_activation_dtype("bf16")) != run_id(with_activation_dtype("fp32")));
  BOOST_TEST(result_keys(RunConfig().to_ini()).count("train.activation_dtype") == 0u);
  BOOST_TEST(result_keys(with_activation_dtype("bf16").to_ini()).at("train.activation_dtype") ==
             "bf16");
}
