// The throughput cache `depthbench bench` writes and `plan` reads: measurements round-trip, a
// new one replaces only the same setting, a malformed file is named and not used, and `plan`
// takes this machine's measurement of the run's own shape first, then the nearest in FLOPs.
#define BOOST_TEST_MODULE cpu throughput cache
#include "sweep/cpu_throughput.hpp"

#include <unistd.h>

#include <boost/test/included/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <string>

using namespace db;
using sweep::ThroughputMeasurement;

namespace {

std::string fresh_cache() {
  const std::string folder = std::filesystem::temp_directory_path().string() +
                             "/cpu_throughput_test_" + std::to_string(getpid());
  std::filesystem::remove_all(folder);
  return folder + "/nested/cpu-throughput.json";  // the folders do not exist yet
}

ThroughputMeasurement measured(int n_layer, int d_model, double flops_per_token,
                               double tokens_per_second, std::string machine = "host-a") {
  ThroughputMeasurement m;
  m.machine = std::move(machine);
  m.measured_at = "2026-12-06T01:00:00Z";
  m.arch = "pre_ln";
  m.n_layer = n_layer;
  m.d_model = d_model;
  m.seq_len = 64;
  m.micro_batch = 8;
  m.threads_per_rank = 1;
  m.ranks = 2;
  m.flops_per_token = flops_per_token;
  m.tokens_per_second = tokens_per_second;
  return m;
}

ModelConfig shape(int n_layer, int d_model) {
  ModelConfig m;
  m.n_layer = n_layer;
  m.d_model = d_model;
  return m;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_recorded_measurement_reads_back_and_replaces_only_its_own_setting) {
  const std::string path = fresh_cache();
  sweep::record_throughput(path, measured(2, 192, 6e6, 1000));
  sweep::record_throughput(path, measured(8, 96, 6.2e6, 2000));
  sweep::record_throughput(path, measured(2, 192, 6e6, 3000));  // the same setting, measured again
  const sweep::ThroughputCache cache = sweep::read_throughput_cache(path);
  BOOST_TEST(cache.problem.empty());
  BOOST_REQUIRE_EQUAL(cache.measurements.size(), 2u);
  BOOST_TEST(cache.measurements[0].n_layer == 8);
  BOOST_TEST(cache.measurements[1].tokens_per_second == 3000);
  BOOST_TEST(cache.measurements[1].gflops_per_rank() == 6e6 * 3000 / 1e9);
  BOOST_TEST(cache.measurements[1].measured_at == "2026-12-06T01:00:00Z");
  // Written by rename: no temporary file is left beside it.
  int files = 0;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(path).parent_path()))
    files += entry.is_regular_file();
  BOOST_TEST(files == 1);
}

BOOST_AUTO_TEST_CASE(a_malformed_cache_is_named_not_used_and_replaced_by_the_next_bench) {
  const std::string path = fresh_cache();
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << "{\"measurements\": [ {\"machine\": \"host-a\"";
  sweep::ThroughputCache cache = sweep::read_throughput_cache(path);
  BOOST_TEST(cache.measurements.empty());
  BOOST_TEST(cache.problem.find(path) == 0u, cache.problem);
  // A measurement without its throughput is refused too.
  std::ofstream(path) << R"({"measurements": [{"machine": "host-a"}]})";
  BOOST_TEST(sweep::read_throughput_cache(path).problem.find("lacks") != std::string::npos);
  sweep::record_throughput(path, measured(2, 192, 6e6, 1000));
  cache = sweep::read_throughput_cache(path);
  BOOST_TEST(cache.problem.empty());
  BOOST_TEST(cache.measurements.size() == 1u);
  // An absent cache is no problem: plan then uses the stated default.
  BOOST_TEST(sweep::read_throughput_cache(path + ".absent").problem.empty());
}

BOOST_AUTO_TEST_CASE(plan_takes_this_machines_measurement_of_the_same_shape_then_nearest_flops) {
  sweep::ThroughputCache cache;
  cache.measurements = {measured(2, 192, 6.0e6, 1000), measured(8, 96, 6.2e6, 2000),
                        measured(4, 136, 6.1e6, 5000, "host-b"), measured(8, 96, 6.2e6, 2500)};
  // Its own shape, the newest of two, even though another shape is nearer in FLOPs.
  auto m = sweep::nearest_measurement(cache, "host-a", shape(8, 96), 6.0e6);
  BOOST_REQUIRE(m.has_value());
  BOOST_TEST(m->tokens_per_second == 2500);
  // A shape never measured: the nearest FLOPs per token by ratio, on this machine only.
  m = sweep::nearest_measurement(cache, "host-a", shape(4, 136), 6.1e6);
  BOOST_REQUIRE(m.has_value());
  BOOST_TEST(m->n_layer == 8);
  m = sweep::nearest_measurement(cache, "host-a", shape(16, 64), 3e6);
  BOOST_TEST(m->n_layer == 2);
  BOOST_TEST(!sweep::nearest_measurement(cache, "host-c", shape(8, 96), 6e6).has_value());
}

BOOST_AUTO_TEST_CASE(the_cache_folder_follows_the_environment) {
  setenv("DEPTHBENCH_CACHE_DIR", "/some/where", 1);
  BOOST_TEST(sweep::throughput_cache_path() == "/some/where/cpu-throughput.json");
  unsetenv("DEPTHBENCH_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  BOOST_TEST(sweep::throughput_cache_path() == "/xdg/depthbench/cpu-throughput.json");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/user", 1);
  BOOST_TEST(sweep::throughput_cache_path() == "/home/user/.cache/depthbench/cpu-throughput.json");
  BOOST_TEST(sweep::this_machine().find("logical cores") != std::string::npos);
}
