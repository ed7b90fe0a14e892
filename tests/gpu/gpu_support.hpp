// Shared pieces of the CUDA parity tests: the "no GPU" skip, fresh random inputs, host↔device
// copies in fp32 or bf16, and the error measure every test reports.
//
// Error measure: max_i |gpu_i − cpu_i| / max_i |cpu_i| (norm-wise relative, so entries near
// zero do not turn rounding noise into large ratios). Bounds (doc/cuda.md "Tolerances"):
//   fp32 mode: 1e-5 — same inputs, fp32 math, only the order of additions differs;
//   bf16 mode: the CPU runs in fp32 on the same bf16-rounded inputs, so the difference is the
//   rounding of bf16 outputs / intermediates: 2^-8 relative per rounding, bound 1.6e-2 (4 ulp).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "ops/cuda/device.hpp"
#include "ops/cuda/device_buffer.hpp"
#include "ops/cuda/elementwise.hpp"
#include "ops/cuda/types.hpp"

namespace db::test {

constexpr double kFp32Tolerance = 1e-5;
constexpr double kBf16Tolerance = 1.6e-2;

// Every test body starts with this: without a GPU the test prints one line and passes.
#define DB_REQUIRE_GPU()                                                             \
  do {                                                                               \
    if (!::db::cuda::cuda_available()) {                                             \
      std::printf("%s: no GPU: skipped\n",                                           \
                  boost::unit_test::framework::current_test_case().p_name->c_str()); \
      BOOST_TEST(true);                                                              \
      return;                                                                        \
    }                                                                                \
  } while (0)

// The emulated device (doc/cuda.md, "The emulated device") runs every kernel on the host, each
// thread a fiber and each memory access checked: a test keeps every kind of shape it checks (tile
// edges, grouped heads, each head dim) and shortens only what costs time there (the longest
// sequences).
inline bool on_emulated_device() {
  static const bool emulated =
      cuda::cuda_available() && cuda::device_name(0).find("(emulated)") != std::string::npos;
  return emulated;
}

inline std::vector<float> random_floats(size_t n, uint64_t seed, double scale = 1.0) {
  Rng rng(seed, "gpu-parity");
  std::vector<float> v(n);
  for (float& x : v) x = float(rng.normal() * scale);
  return v;
}

inline float round_bf16(float x) {
  return __bfloat162float(__float2bfloat16(x));
}
inline std::vector<float> rounded_bf16(std::vector<float> v) {
  for (float& x : v) x = round_bf16(x);
  return v;
}

// A device copy of host fp32 values in element type T.
template <class T>
cuda::DeviceBuffer<T> to_device(const std::vector<float>& host) {
  cuda::DeviceBuffer<T> out(host.size());
  if constexpr (std::is_same_v<T, float>) {
    out.upload(host);
  } else {
    cuda::DeviceBuffer<float> tmp;
    tmp.upload(host);
    cuda::convert(out.data(), tmp.data(), int64_t(host.size()));
  }
  return out;
}

template <class T>
std::vector<float> to_host(const cuda::DeviceBuffer<T>& device) {
  if constexpr (std::is_same_v<T, float>) {
    return device.download();
  } else {
    cuda::DeviceBuffer<float> tmp(device.size());
    cuda::convert(tmp.data(), device.data(), int64_t(device.size()));
    return tmp.download();
  }
}

// `floor`: the smallest scale to measure against, for a result that vanishes analytically and is
// rounding noise on both sides (attention's dq and dk over a single key).
inline double relative_error(const std::vector<float>& gpu, const std::vector<float>& cpu,
                             double floor = 1e-30) {
  if (gpu.size() != cpu.size()) return INFINITY;
  double diff = 0, scale = floor;
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (!std::isfinite(gpu[i])) return INFINITY;
    diff = std::max(diff, std::fabs(double(gpu[i]) - cpu[i]));
    scale = std::max(scale, std::fabs(double(cpu[i])));
  }
  return diff / scale;
}

// Prints the error next to its bound, so the log documents the achieved precision.
inline bool within(const char* what, double error, double bound) {
  std::printf("  %-40s error %.3e (bound %.1e)%s\n", what, error, bound,
              error <= bound ? "" : "  FAILED");
  return error <= bound;
}

template <class T>
constexpr double tolerance() {
  return std::is_same_v<T, float> ? kFp32Tolerance : kBf16Tolerance;
}
// Inputs as the GPU sees them: rounded to bf16 in bf16 mode.
template <class T>
std::vector<float> as_input(const std::vector<float>& v) {
  return std::is_same_v<T, float> ? v : rounded_bf16(v);
}

// An output of both backends: the host vector (CPU) and its device twin (GPU), equal at start.
struct Pair {
  std::vector<float> host;
  cuda::DeviceBuffer<float> device;
  explicit Pair(const std::vector<float>& start) : host(start), device(to_device<float>(start)) {}
  float* cpu() { return host.data(); }
  float* gpu() { return device.data(); }
  std::vector<float> gpu_values() const { return device.download(); }
};

inline std::vector<float> zeros(size_t n) {
  return std::vector<float>(n, 0.f);
}

// The device twin against the host vector, in fp32 mode.
inline bool close(const char* what, Pair& p) {
  return within(what, relative_error(p.gpu_values(), p.host), kFp32Tolerance);
}

}  // namespace db::test
