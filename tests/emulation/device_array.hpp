// Shared by the emulated device's library tests: a device allocation of T (float, bf16, ...),
// zeroed or a copy of host values, freed by its owner, read back with to_host().
#pragma once
#include <cuda_runtime.h>

#include <boost/test/unit_test.hpp>
#include <vector>

namespace db::test {

template <class T>
struct DeviceArray {
  T* data = nullptr;
  size_t count = 0;
  explicit DeviceArray(size_t n) : count(n) {  // zeros
    BOOST_REQUIRE(cudaMalloc(reinterpret_cast<void**>(&data), n * sizeof(T)) == cudaSuccess);
    BOOST_REQUIRE(cudaMemset(data, 0, n * sizeof(T)) == cudaSuccess);
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) { upload(host); }
  ~DeviceArray() { cudaFree(data); }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  void upload(const std::vector<T>& host) {
    BOOST_REQUIRE(host.size() <= count);
    BOOST_REQUIRE(cudaMemcpy(data, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice) ==
                  cudaSuccess);
  }
  std::vector<T> to_host() const {
    std::vector<T> host(count);
    BOOST_REQUIRE(cudaMemcpy(host.data(), data, count * sizeof(T), cudaMemcpyDeviceToHost) ==
                  cudaSuccess);
    return host;
  }
};

}  // namespace db::test
