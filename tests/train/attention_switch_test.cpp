// train.attention, the switch between the CUDA backend's attention paths: parsed and checked when
// the config is read (a bad value is one line naming the valid ones), carried to the backend in
// OpsOptions, recorded in the run file, and outside the run id (like the backend, it picks an
// implementation of the same attention). The CPU backend accepts every value.
#define BOOST_TEST_MODULE attention_switch
#include <boost/test/unit_test.hpp>
#include <filesystem>

#include "core/error.hpp"
#include "io/run_file.hpp"
#include "ops/backend.hpp"
#include "support/h5_tensors.hpp"
#include "train/run_config.hpp"
#include "train/run_metadata.hpp"

using namespace db;
namespace fs = std::filesystem;

namespace {
RunConfig with_attention(const std::string& value) {
  return parse_run_config_text("[train]\nattention = " + value + "\n");
}
}  // namespace

BOOST_AUTO_TEST_CASE(every_path_parses_and_reaches_the_ops_options) {
  BOOST_TEST(RunConfig().attention == "auto");
  BOOST_TEST((RunConfig().ops_options().attention == AttentionPath::automatic));
  for (const char* name : {"auto", "cudnn", "flash", "reference"}) {
    const RunConfig c = with_attention(name);
    BOOST_TEST(c.attention == name);
    BOOST_TEST(attention_path_name(c.ops_options().attention) == std::string(name));
    BOOST_TEST(c.to_ini().find(std::string("attention = ") + name + "\n") != std::string::npos);
  }
  const RunConfig c = parse_run_config_text("[train]\nprecision = fp32\nattention = cudnn\n");
  BOOST_TEST((c.ops_options().precision == Precision::fp32));
  BOOST_TEST((c.ops_options().attention == AttentionPath::cudnn));
}

BOOST_AUTO_TEST_CASE(an_unknown_path_is_one_line_naming_the_valid_ones) {
  try {
    with_attention("fast");
    BOOST_FAIL("train.attention = fast was accepted");
  } catch (const Error& e) {
    const std::string message = e.what();
    BOOST_TEST_MESSAGE(message);
    BOOST_TEST(message.find("unknown attention path 'fast'") != std::string::npos);
    BOOST_TEST(message.find("auto, cudnn, flash, reference") != std::string::npos);
    BOOST_TEST(message.find('\n') == std::string::npos);
  }
  BOOST_CHECK_THROW(parse_attention_path("Auto"), Error);
}

BOOST_AUTO_TEST_CASE(the_path_does_not_change_the_run_id) {
  BOOST_TEST(run_id(with_attention("auto")) == run_id(with_attention("reference")));
  BOOST_TEST(run_id(with_attention("cudnn")) == run_id(RunConfig()));
  BOOST_TEST(result_keys(with_attention("flash").to_ini()).count("train.attention") == 0u);
}

BOOST_AUTO_TEST_CASE(the_run_file_records_the_requested_path) {
  const fs::path dir = fs::temp_directory_path() / "depthbench_attention_switch";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "run.h5").string();
  {
    RunFile file = RunFile::create(path);
    write_run_metadata(file, with_attention("cudnn"), 1);
    file.publish();
  }
  H5Handle file = test::open_h5(path);
  BOOST_TEST(read_string_attribute(file.get(), "attention") == "cudnn");
  fs::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(the_cpu_backend_accepts_every_path) {
  for (AttentionPath path : {AttentionPath::automatic, AttentionPath::cudnn, AttentionPath::flash,
                             AttentionPath::reference})
    BOOST_TEST(std::string(make_ops<float>(find_backend("cpu"), {Precision::bf16, path})->name()) ==
               "cpu");
}
