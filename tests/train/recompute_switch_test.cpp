// train.recompute: parsed and checked when the config is read (a bad value is one line naming
// the valid ones), recorded in the run file and outside the run id (the same gradients, bit for
// bit: tests/model/recompute_test.cpp).
#define BOOST_TEST_MODULE recompute_switch
#include <boost/test/unit_test.hpp>
#include <filesystem>

#include "core/error.hpp"
#include "io/run_file.hpp"
#include "model/recompute.hpp"
#include "support/h5_tensors.hpp"
#include "train/run_config.hpp"
#include "train/run_metadata.hpp"

using namespace db;
namespace fs = std::filesystem;

namespace {
RunConfig with_recompute(const std::string& value) {
  return parse_run_config_text("[train]\nrecompute = " + value + "\n");
}
}  // namespace

BOOST_AUTO_TEST_CASE(both_values_parse_and_none_is_the_default) {
  BOOST_TEST(RunConfig().recompute == "none");
  for (const char* name : {"none", "blocks"}) {
    const RunConfig c = with_recompute(name);
    BOOST_TEST(c.recompute == name);
    BOOST_TEST(recompute_name(parse_recompute(c.recompute)) == std::string(name));
    BOOST_TEST(c.to_ini().find(std::string("recompute = ") + name + "\n") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(an_unknown_value_is_one_line_naming_the_valid_ones) {
  try {
    with_recompute("layers");
    BOOST_FAIL("train.recompute = layers was accepted");
  } catch (const Error& e) {
    const std::string message = e.what();
    BOOST_TEST(message.find("train.recompute must be none or blocks, not 'layers'") !=
               std::string::npos);
    BOOST_TEST(message.find('\n') == std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(recompute_does_not_change_the_run_id) {
  BOOST_TEST(run_id(with_recompute("blocks")) == run_id(RunConfig()));
  BOOST_TEST(result_keys(with_recompute("blocks").to_ini()).count("train.recompute") == 0u);
}

BOOST_AUTO_TEST_CASE(the_run_file_records_it) {
  const fs::path dir = fs::temp_directory_path() / "depthbench_recompute_switch";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "run.h5").string();
  {
    RunFile file = RunFile::create(path);
    write_run_metadata(file, with_recompute("blocks"), 1);
    file.publish();
  }
  H5Handle file = test::open_h5(path);
  BOOST_TEST(read_string_attribute(file.get(), "recompute") == "blocks");
  fs::remove_all(dir);
}
