// The CUDA device API on the emulated device (issue 37): what kernels of src/ops/cuda/ use,
// compiled by g++ after the real cuda_runtime.h / cuda_bf16.h (which give the types, dim3,
// __nv_bfloat16 and its host conversions). __CUDA_ARCH__ stays undefined: host and device code
// share one compilation.
//
// Model (simt/grid.hpp): a block's threads are fibers on the host thread that runs the grid;
// a thread runs until it reaches a barrier or a warp collective. Static __shared__ arrays are
// `static thread_local`: one array per host thread, which the blocks of a grid share one after
// another (as blocks reuse a multiprocessor's shared memory), and whose addresses the hazard
// checker finds in the thread-local storage block. Warps are 32 consecutive linear thread ids.
#pragma once
#include <cuda_runtime.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <source_location>
#include <type_traits>

namespace db::emulation {

// The launch's dynamic shared memory (`extern __shared__`), 128-byte aligned.
void* dynamic_shared_memory();

namespace device {

// The running thread's indices, set by the scheduler before it resumes a thread.
struct Indices {
  uint3 thread_idx, block_idx, block_dim, grid_dim;
};
extern constinit thread_local Indices indices;

void syncthreads(const char* file, unsigned line);
void syncwarp(unsigned mask, const char* file, unsigned line);
// Exchanges `bytes` (≤ 8) of `value` with the lane `src_lane` computed by each lane (its own
// when out of its segment).
void shuffle(unsigned mask, const void* value, void* result, size_t bytes, int src_lane,
             const char* what, const char* file, unsigned line);
unsigned ballot(unsigned mask, bool predicate, const char* what, const char* file, unsigned line);
unsigned lane_id();
// The lanes of `mask` that exist (a block's last warp may be partial).
unsigned existing_lanes(unsigned mask);

float atomic_add(float* p, float v);
double atomic_add(double* p, double v);
int atomic_add(int* p, int v);
unsigned atomic_add(unsigned* p, unsigned v);
unsigned long long atomic_add(unsigned long long* p, unsigned long long v);
int atomic_max(int* p, int v);
unsigned atomic_max(unsigned* p, unsigned v);
unsigned long long atomic_max(unsigned long long* p, unsigned long long v);
float atomic_max(float* p, float v);
double atomic_max(double* p, double v);
int atomic_cas(int* p, int compare, int v);
unsigned atomic_cas(unsigned* p, unsigned compare, unsigned v);
unsigned long long atomic_cas(unsigned long long* p, unsigned long long compare,
                              unsigned long long v);

}  // namespace device
}  // namespace db::emulation

// ---- qualifiers -------------------------------------------------------------------------------
// cuda_runtime.h already maps __global__, __device__, __host__ to nothing and __forceinline__ to
// an always-inline function for a host compiler.
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif
#undef __shared__
#define __shared__ static thread_local __attribute__((aligned(16)))

// ---- built-in variables -----------------------------------------------------------------------
#define threadIdx (::db::emulation::device::indices.thread_idx)
#define blockIdx (::db::emulation::device::indices.block_idx)
#define blockDim (::db::emulation::device::indices.block_dim)
#define gridDim (::db::emulation::device::indices.grid_dim)
constexpr int warpSize = 32;

// ---- barriers and warp collectives ------------------------------------------------------------
inline void __syncthreads(std::source_location at = std::source_location::current()) {
  ::db::emulation::device::syncthreads(at.file_name(), at.line());
}
inline void __syncwarp(unsigned mask = 0xffffffffu,
                       std::source_location at = std::source_location::current()) {
  ::db::emulation::device::syncwarp(mask, at.file_name(), at.line());
}
inline void __threadfence() {}
inline void __threadfence_block() {}

namespace db::emulation::device {
template <class T>
T shuffle_as(unsigned mask, T var, int src_lane, const char* what, const std::source_location& at) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "shuffles move up to 8 bytes");
  T result;
  shuffle(mask, &var, &result, sizeof(T), src_lane, what, at.file_name(), at.line());
  return result;
}
// The first lane of this lane's segment of `width` lanes, and the segment's end.
inline int segment_start(int width) {
  return int(lane_id()) & ~(width - 1);
}
}  // namespace db::emulation::device

// Source lanes as the PTX shfl.sync modes define them (idx, up, down, bfly): a lane whose source
// falls outside its segment of `width` lanes keeps its own value.
template <class T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize,
              std::source_location at = std::source_location::current()) {
  using namespace ::db::emulation::device;
  const int start = segment_start(width);
  return shuffle_as(mask, var, start + (src_lane & (width - 1)), "__shfl_sync", at);
}
template <class T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                 std::source_location at = std::source_location::current()) {
  using namespace ::db::emulation::device;
  const int lane = int(lane_id()), start = segment_start(width);
  const int src = lane - int(delta);
  return shuffle_as(mask, var, src < start ? lane : src, "__shfl_up_sync", at);
}
template <class T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                   std::source_location at = std::source_location::current()) {
  using namespace ::db::emulation::device;
  const int lane = int(lane_id()), start = segment_start(width);
  const int src = lane + int(delta);
  return shuffle_as(mask, var, src >= start + width ? lane : src, "__shfl_down_sync", at);
}
template <class T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize,
                  std::source_location at = std::source_location::current()) {
  using namespace ::db::emulation::device;
  const int lane = int(lane_id()), start = segment_start(width);
  const int src = lane ^ lane_mask;
  return shuffle_as(mask, var, (src < start || src >= start + width) ? lane : src,
                    "__shfl_xor_sync", at);
}
inline unsigned __ballot_sync(unsigned mask, int predicate,
                              std::source_location at = std::source_location::current()) {
  return ::db::emulation::device::ballot(mask, predicate != 0, "__ballot_sync", at.file_name(),
                                         at.line());
}
inline int __any_sync(unsigned mask, int predicate,
                      std::source_location at = std::source_location::current()) {
  return ::db::emulation::device::ballot(mask, predicate != 0, "__any_sync", at.file_name(),
                                         at.line()) != 0;
}
inline int __all_sync(unsigned mask, int predicate,
                      std::source_location at = std::source_location::current()) {
  // Every existing lane of the mask voted true.
  const unsigned votes = ::db::emulation::device::ballot(mask, predicate != 0, "__all_sync",
                                                         at.file_name(), at.line());
  return votes == ::db::emulation::device::existing_lanes(mask);
}
inline unsigned __activemask() {
  return 0xffffffffu;
}

// ---- atomics (performed by the uninstrumented library: atomics never race each other) ----------
inline float atomicAdd(float* p, float v) {
  return ::db::emulation::device::atomic_add(p, v);
}
inline double atomicAdd(double* p, double v) {
  return ::db::emulation::device::atomic_add(p, v);
}
inline int atomicAdd(int* p, int v) {
  return ::db::emulation::device::atomic_add(p, v);
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  return ::db::emulation::device::atomic_add(p, v);
}
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return ::db::emulation::device::atomic_add(p, v);
}
inline int atomicMax(int* p, int v) {
  return ::db::emulation::device::atomic_max(p, v);
}
inline unsigned atomicMax(unsigned* p, unsigned v) {
  return ::db::emulation::device::atomic_max(p, v);
}
inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
  return ::db::emulation::device::atomic_max(p, v);
}
// Not CUDA built-ins (CUDA code builds them from atomicCAS); given for the emulation's tests.
inline float atomicMax(float* p, float v) {
  return ::db::emulation::device::atomic_max(p, v);
}
inline double atomicMax(double* p, double v) {
  return ::db::emulation::device::atomic_max(p, v);
}
inline int atomicCAS(int* p, int compare, int v) {
  return ::db::emulation::device::atomic_cas(p, compare, v);
}
inline unsigned atomicCAS(unsigned* p, unsigned compare, unsigned v) {
  return ::db::emulation::device::atomic_cas(p, compare, v);
}
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long compare,
                                    unsigned long long v) {
  return ::db::emulation::device::atomic_cas(p, compare, v);
}

// ---- math intrinsics (host libm; the fast-math variants at full precision) ---------------------
inline float __expf(float x) {
  return std::exp(x);
}
inline float __logf(float x) {
  return std::log(x);
}
inline float __sinf(float x) {
  return std::sin(x);
}
inline float __cosf(float x) {
  return std::cos(x);
}
inline float __powf(float x, float y) {
  return std::pow(x, y);
}
inline float __fdividef(float a, float b) {
  return a / b;
}
inline float __fadd_rn(float a, float b) {
  return a + b;
}
inline float __fsub_rn(float a, float b) {
  return a - b;
}
inline float __fmul_rn(float a, float b) {
  return a * b;
}
inline float __fdiv_rn(float a, float b) {
  return a / b;
}
inline float __frcp_rn(float x) {
  return 1.0f / x;
}
inline float __fsqrt_rn(float x) {
  return std::sqrt(x);
}
inline float __fmaf_rn(float a, float b, float c) {
  return std::fma(a, b, c);
}
inline double __dadd_rn(double a, double b) {
  return a + b;
}
inline double __dmul_rn(double a, double b) {
  return a * b;
}
inline float __saturatef(float x) {
  return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
}
inline float rsqrtf(float x) {
  return 1.0f / std::sqrt(x);
}
inline double rsqrt(double x) {
  return 1.0 / std::sqrt(x);
}
// cos(πx), sin(πx) with the argument reduced exactly (glibc has no cospif).
inline float cospif(float x) {
  return float(std::cos(3.14159265358979323846 * double(x)));
}
inline float sinpif(float x) {
  return float(std::sin(3.14159265358979323846 * double(x)));
}
inline int __float2int_rn(float x) {
  return int(std::nearbyint(x));
}
inline int __float_as_int(float x) {
  return std::bit_cast<int>(x);
}
inline float __int_as_float(int x) {
  return std::bit_cast<float>(x);
}
inline unsigned __float_as_uint(float x) {
  return std::bit_cast<unsigned>(x);
}
inline float __uint_as_float(unsigned x) {
  return std::bit_cast<float>(x);
}
inline int __popc(unsigned x) {
  return __builtin_popcount(x);
}
inline int __clz(int x) {
  return x == 0 ? 32 : __builtin_clz(unsigned(x));
}
inline int __ffs(int x) {
  return __builtin_ffs(x);
}
template <class T>
T __ldg(const T* p) {
  return *p;
}
// CUDA's global min/max overloads.
inline int min(int a, int b) {
  return a < b ? a : b;
}
inline int max(int a, int b) {
  return a > b ? a : b;
}
inline unsigned min(unsigned a, unsigned b) {
  return a < b ? a : b;
}
inline unsigned max(unsigned a, unsigned b) {
  return a > b ? a : b;
}
inline long long min(long long a, long long b) {
  return a < b ? a : b;
}
inline long long max(long long a, long long b) {
  return a > b ? a : b;
}
inline long min(long a, long b) {
  return a < b ? a : b;
}
inline long max(long a, long b) {
  return a > b ? a : b;
}
inline unsigned long long min(unsigned long long a, unsigned long long b) {
  return a < b ? a : b;
}
inline unsigned long long max(unsigned long long a, unsigned long long b) {
  return a > b ? a : b;
}
inline float min(float a, float b) {
  return std::fmin(a, b);
}
inline float max(float a, float b) {
  return std::fmax(a, b);
}
inline double min(double a, double b) {
  return std::fmin(a, b);
}
inline double max(double a, double b) {
  return std::fmax(a, b);
}

// A shared-window address as PTX's cvta.to.shared gives it; the emulation's PTX functions take
// generic pointers, so this is the pointer's value.
inline size_t __cvta_generic_to_shared(const void* p) {
  return reinterpret_cast<size_t>(p);
}
