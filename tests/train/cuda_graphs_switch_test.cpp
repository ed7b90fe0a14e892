// train.cuda_graphs, the replay of a micro-batch from a CUDA graph (doc/cuda.md, "Host
// overhead"): parsed and checked when the config is read (a bad value is one line naming the
// valid ones), carried to the backend in OpsOptions, outside the run id (the same kernels, only
// launched differently). The CPU backend accepts every value, runs each micro-batch as it comes
// and says so.
#define BOOST_TEST_MODULE cuda_graphs_switch
#include <boost/test/unit_test.hpp>

#include "core/error.hpp"
#include "ops/backend.hpp"
#include "train/run_config.hpp"
#include "train/run_metadata.hpp"

using namespace db;

namespace {
RunConfig with_cuda_graphs(const std::string& value) {
  return parse_run_config_text("[train]\ncuda_graphs = " + value + "\n");
}
}  // namespace

BOOST_AUTO_TEST_CASE(every_value_parses_and_reaches_the_ops_options) {
  BOOST_TEST(RunConfig().cuda_graphs == "auto");
  BOOST_TEST((RunConfig().ops_options().cuda_graphs == CudaGraphs::automatic));
  BOOST_TEST((with_cuda_graphs("on").ops_options().cuda_graphs == CudaGraphs::on));
  BOOST_TEST((with_cuda_graphs("off").ops_options().cuda_graphs == CudaGraphs::off));
  for (const char* value : {"auto", "on", "off"})
    BOOST_TEST(with_cuda_graphs(value).to_ini().find(std::string("cuda_graphs = ") + value +
                                                     "\n") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(an_unknown_value_is_one_line_naming_the_valid_ones) {
  try {
    with_cuda_graphs("yes");
    BOOST_FAIL("train.cuda_graphs = yes was accepted");
  } catch (const Error& e) {
    const std::string message = e.what();
    BOOST_TEST_MESSAGE(message);
    BOOST_TEST(message.find("train.cuda_graphs") != std::string::npos);
    BOOST_TEST(message.find("'yes'") != std::string::npos);
    BOOST_TEST(message.find("auto, on, off") != std::string::npos);
    BOOST_TEST(message.find('\n') == std::string::npos);
  }
  BOOST_CHECK_THROW(parse_cuda_graphs("ON"), Error);
}

BOOST_AUTO_TEST_CASE(the_value_does_not_change_the_run_id) {
  BOOST_TEST(run_id(with_cuda_graphs("on")) == run_id(with_cuda_graphs("off")));
  BOOST_TEST(run_id(with_cuda_graphs("auto")) == run_id(RunConfig()));
  BOOST_TEST(result_keys(with_cuda_graphs("off").to_ini()).count("train.cuda_graphs") == 0u);
}

BOOST_AUTO_TEST_CASE(the_cpu_backend_accepts_every_value_and_runs_each_micro_batch) {
  for (CudaGraphs mode : {CudaGraphs::automatic, CudaGraphs::on, CudaGraphs::off}) {
    OpsOptions options;
    options.cuda_graphs = mode;
    auto ops = make_ops<float>(find_backend("cpu"), options);
    int runs = 0;
    for (int i = 0; i < 4; ++i) ops->run_captured("key", [&] { ++runs; });
    BOOST_TEST(runs == 4);
    BOOST_TEST(ops->capture_status() == "not applicable (cpu)");
  }
}
