// RAII owner of one typed device allocation (the backend's pool, cuda_memory.hpp). Move-only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_memory.hpp"

namespace db::cuda {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t count) { resize(count); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      release();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  ~DeviceBuffer() { release(); }

  // Reallocates (contents lost) when the size changes.
  void resize(size_t count) {
    if (count == size_) return;
    release();
    data_ = static_cast<T*>(device_allocate(count * sizeof(T)));
    size_ = count;
  }
  void zero(cudaStream_t stream = nullptr) {
    if (size_) CUDA_CHECK(cudaMemsetAsync(data_, 0, size_ * sizeof(T), stream));
  }
  void upload(const T* host, size_t count) {
    resize(count);
    if (count) CUDA_CHECK(cudaMemcpy(data_, host, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }
  std::vector<T> download() const {
    std::vector<T> host(size_);
    if (size_)
      CUDA_CHECK(cudaMemcpy(host.data(), data_, size_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }

 private:
  void release() noexcept {
    device_release(data_);
    data_ = nullptr;
    size_ = 0;
  }
  T* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace db::cuda
