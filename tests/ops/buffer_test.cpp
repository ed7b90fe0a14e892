// Device-neutral buffers (core/buffer.hpp) in host memory and in a stand-in device space, and
// the backend registry (ops/backend.hpp): lookups by name, "auto", and the clear errors of a
// backend or precision this build cannot run. What each backend computes is the conformance
// suite's (tests/backend).
#define BOOST_TEST_MODULE buffers and backends
#include "core/buffer.hpp"

#include <boost/test/unit_test.hpp>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "ops/backend.hpp"

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

namespace {
// A device memory space for the tests: host memory behind a resource that is not the host's,
// counting its allocations.
class FakeDeviceMemory final : public MemoryResource {
 public:
  const char* name() const override { return "fake-device"; }
  bool is_host() const override { return false; }
  void* allocate(size_t bytes) override {
    ++live;
    return ::operator new(bytes);
  }
  void release(void* data, size_t) noexcept override {
    --live;
    ::operator delete(data);
  }
  void copy(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void zero(void* data, size_t bytes) override { std::memset(data, 0, bytes); }
  int live = 0;
};
}  // namespace

BOOST_AUTO_TEST_CASE(memory_space_scopes_nest_and_restore) {
  FakeDeviceMemory device_memory;
  const MemorySpace device(&device_memory);
  BOOST_TEST((current_memory_space() == MemorySpace::host));
  {
    MemorySpaceScope outer(device);
    BOOST_TEST((current_memory_space() == device));
    Buffer<float> on_device(5);
    BOOST_TEST(!on_device.on_host());
    BOOST_TEST(device_memory.live == 1);
    {
      MemorySpaceScope inner(MemorySpace::host);
      Buffer<int> on_host(4);
      BOOST_TEST(on_host.on_host());
      Buffer<float> copied = on_device;  // a copy lives in the current space
      BOOST_TEST(copied.on_host());
    }
    BOOST_TEST((current_memory_space() == device));
  }
  BOOST_TEST(device_memory.live == 0);
  BOOST_TEST((current_memory_space() == MemorySpace::host));
}

BOOST_AUTO_TEST_CASE(backends_are_found_by_name_and_unknown_names_list_the_valid_ones) {
  BOOST_TEST(registered_backends().size() >= 1u);
  BOOST_TEST(std::string(registered_backends().front()->name()) == "cpu");
  BOOST_TEST(std::string(find_backend("cpu").name()) == "cpu");
  BOOST_TEST(&host_backend() == &find_backend("cpu"));
  BOOST_TEST(&choose_backend("cpu") == &find_backend("cpu"));
  BOOST_TEST(choose_backend("auto").available());
  BOOST_CHECK_EXCEPTION(choose_backend("tpu"), Error, [](const Error& e) {
    return std::string(e.what()).find("valid: auto, " + backend_names()) != std::string::npos;
  });
  // Every registered backend reports its own name (a third backend would not print "cpu").
  for (const Backend* b : registered_backends()) BOOST_TEST(&find_backend(b->name()) == b);
}

BOOST_AUTO_TEST_CASE(a_backend_that_cannot_run_or_has_no_double_says_so) {
  for (Backend* b : registered_backends()) {
    if (!b->available())
      BOOST_CHECK_EXCEPTION(choose_backend(b->name()), Error, [&](const Error& e) {
        return std::string(e.what()).find(b->unavailable_reason()) != std::string::npos;
      });
    else if (std::string(b->name()) != "cpu")  // device backends compute in float only
      BOOST_CHECK_EXCEPTION(make_ops<double>(*b), Error, [](const Error& e) {
        return std::string(e.what()).find("float only") != std::string::npos;
      });
  }
  BOOST_TEST(std::string(make_ops<float>(find_backend("cpu"))->name()) == "cpu");
  BOOST_TEST(std::string(make_ops<double>(find_backend("cpu"))->name()) == "cpu");
  BOOST_CHECK_THROW(parse_precision("fp16"), Error);
  BOOST_TEST((parse_precision("bf16") == Precision::bf16));
}
