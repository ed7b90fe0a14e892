// Device-neutral buffers (core/buffer.hpp) and backend choice (ops/make_ops.hpp) on the host:
// what every model buffer relies on, and the clear errors of a backend this build cannot run.
#define BOOST_TEST_MODULE buffers and backends
#include "core/buffer.hpp"

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "ops/make_ops.hpp"

using namespace db;

BOOST_AUTO_TEST_CASE(buffer_copies_are_deep_and_round_trip_through_the_host) {
  Buffer<float> a;
  a.upload({1.f, 2.f, 3.f});
  Buffer<float> b = a;
  b.assign_zeros(3);
  BOOST_TEST(a.to_host() == std::vector<float>({1.f, 2.f, 3.f}), boost::test_tools::per_element());
  BOOST_TEST(b.to_host() == std::vector<float>(3, 0.f), boost::test_tools::per_element());
  b.swap(a);
  BOOST_TEST(b.to_host()[2] == 3.f);
  BOOST_TEST(a.size() == 3u);
}

BOOST_AUTO_TEST_CASE(resize_to_the_same_size_keeps_the_data) {
  Buffer<double> a;
  a.upload({4.0, 5.0});
  const double* before = a.data();
  a.resize(2);
  BOOST_TEST(a.data() == before);
  BOOST_TEST(a.to_host()[1] == 5.0);
  a.resize(7);
  BOOST_TEST(a.size() == 7u);
}

BOOST_AUTO_TEST_CASE(memory_space_scopes_nest_and_restore) {
  BOOST_TEST((current_memory_space() == MemorySpace::host));
  {
    MemorySpaceScope outer(MemorySpace::cuda);
    BOOST_TEST((current_memory_space() == MemorySpace::cuda));
    {
      MemorySpaceScope inner(MemorySpace::host);
      Buffer<int> on_host(4);
      BOOST_TEST(on_host.on_host());
    }
    BOOST_TEST((current_memory_space() == MemorySpace::cuda));
  }
  BOOST_TEST((current_memory_space() == MemorySpace::host));
}

BOOST_AUTO_TEST_CASE(cuda_in_double_or_without_a_gpu_is_a_clear_error) {
  BOOST_CHECK_EXCEPTION(make_ops<double>(Backend::cuda), Error, [](const Error& e) {
    return std::string(e.what()).find("float only") != std::string::npos;
  });
  if (!cuda_compiled_in())
    BOOST_CHECK_EXCEPTION(make_ops<float>(Backend::cuda), Error, [](const Error& e) {
      return std::string(e.what()).find("no CUDA backend") != std::string::npos;
    });
  BOOST_TEST(std::string(make_ops<float>(Backend::cpu)->name()) == "cpu");
  BOOST_CHECK_THROW(parse_precision("fp16"), Error);
  BOOST_TEST((parse_precision("bf16") == Precision::bf16));
}
