// The emulated device's hazard checker (src/emulation/simt/hazards.cpp). This file is compiled
// like the backend's kernels under emulation: g++ -fsanitize=thread
// --param=tsan-instrument-func-entry-exit=0, without libtsan, so every load and store of its
// kernels reaches the checker's hooks. Each hazard kind is planted in a small kernel and must be
// reported as a DeviceFault naming kernel, block, thread and address; the correct twin of each
// kernel must run clean and give the right result.
#define BOOST_TEST_MODULE simt_hazards
#include <cuda_runtime.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "emulation/grid_faults.hpp"
#include "emulation/simt/device_api.hpp"
#include "emulation/simt/fault.hpp"
#include "emulation/simt/grid.hpp"
#include "emulation/simt/ptx.hpp"

using db::emulation::DeviceFault;
using db::emulation::LaunchShape;
using db::emulation::run_grid;
namespace ptx = db::emulation::ptx;

namespace {

using db::test::contains;
using db::test::fault_of;
using db::test::launch_shape;

// Device memory from the emulated runtime (the checker knows its allocations).
template <class T>
T* device_array(size_t n) {
  void* p = nullptr;
  BOOST_REQUIRE(cudaMalloc(&p, n * sizeof(T)) == cudaSuccess);
  return static_cast<T*>(p);
}

// A shared-memory tree reduction; `barrier_each_step` false drops the barrier inside the loop.
__global__ void tree_sum_kernel(float* out, const float* x, bool barrier_each_step) {
  __shared__ float s[256];
  const unsigned t = threadIdx.x;
  s[t] = x[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) s[t] += s[t + stride];
    if (barrier_each_step) __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// y[i] = 2 x[i] over n elements; `guard` false drops the tail guard.
__global__ void double_kernel(float* y, const float* x, int n, bool guard) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (guard && i >= n) return;
  y[i] = 2.0f * x[i];
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_reduction_with_its_barriers_runs_clean) {
  const int blocks = 4, threads = 256;
  float* x = device_array<float>(blocks * threads);
  float* out = device_array<float>(blocks);
  for (int i = 0; i < blocks * threads; ++i) x[i] = float(i % 10);
  const std::string fault = fault_of(launch_shape(dim3(blocks), dim3(threads), "tree_sum"),
                                     [&] { tree_sum_kernel(out, x, true); });
  BOOST_TEST(fault == "");
  for (int b = 0; b < blocks; ++b) {
    float expected = 0;
    for (int i = 0; i < threads; ++i) expected += float((b * threads + i) % 10);
    BOOST_TEST(out[b] == expected);
  }
}

BOOST_AUTO_TEST_CASE(a_reduction_missing_its_barrier_is_a_shared_memory_race) {
  float* x = device_array<float>(256);
  float* out = device_array<float>(1);
  for (int i = 0; i < 256; ++i) x[i] = 1.0f;
  const std::string fault = fault_of(launch_shape(dim3(1), dim3(256), "tree_sum_racy"),
                                     [&] { tree_sum_kernel(out, x, false); });
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(contains(fault, "kernel tree_sum_racy, block (0,0,0), thread"));
  BOOST_TEST(contains(fault, "shared-memory race"));
  BOOST_TEST(contains(fault, "static __shared__"));
}

BOOST_AUTO_TEST_CASE(an_out_of_bounds_read_in_the_tail_block_is_reported) {
  const int n = 1000, threads = 128, blocks = (n + threads - 1) / threads;
  float* x = device_array<float>(n);
  float* y = device_array<float>(n);
  for (int i = 0; i < n; ++i) x[i] = float(i);
  std::string fault = fault_of(launch_shape(dim3(blocks), dim3(threads), "double_guarded"),
                               [&] { double_kernel(y, x, n, true); });
  BOOST_TEST(fault == "");
  BOOST_TEST(y[n - 1] == 2.0f * float(n - 1));
  fault = fault_of(launch_shape(dim3(blocks), dim3(threads), "double_unguarded"),
                   [&] { double_kernel(y, x, n, false); });
  BOOST_TEST_MESSAGE(fault);
  // Element 1000 is the first past the end: block 7, thread 1000 - 896 = 104.
  BOOST_TEST(contains(fault, "kernel double_unguarded, block (7,0,0), thread (104,0,0)"));
  BOOST_TEST(contains(fault, "out-of-bounds global read of 4 bytes"));
  // The device runs the next kernel normally.
  fault = fault_of(launch_shape(dim3(blocks), dim3(threads), "double_guarded"),
                   [&] { double_kernel(y, x, n, true); });
  BOOST_TEST(fault == "");
}

BOOST_AUTO_TEST_CASE(reading_shared_memory_the_block_never_wrote_is_reported) {
  // Block 1 reads the slot block 0 wrote: on a GPU another block's leftovers (or garbage).
  std::vector<float> out(2, 0.0f);
  std::string fault = fault_of(launch_shape(dim3(2), dim3(32), "stale_shared"), [&] {
    __shared__ float s[32];
    if (blockIdx.x == 0) s[threadIdx.x] = 1.0f;
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = s[5];
  });
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(contains(fault, "kernel stale_shared, block (1,0,0), thread (0,0,0)"));
  BOOST_TEST(contains(fault, "never wrote (uninitialised)"));
  // Dynamic shared memory too.
  fault = fault_of(launch_shape(dim3(1), dim3(32), "uninit_dynamic", 256), [&] {
    float* s = static_cast<float*>(db::emulation::dynamic_shared_memory());
    s[threadIdx.x] = 1.0f;
    __syncthreads();
    out[0] = s[threadIdx.x + 32];
  });
  BOOST_TEST(contains(fault, "dynamic shared offset 128"));
  BOOST_TEST(contains(fault, "uninitialised"));
}

BOOST_AUTO_TEST_CASE(
    a_read_of_a_cp_async_destination_before_its_wait_sees_old_data_and_is_reported) {
  // Each thread copies 16 bytes into shared memory that held -1s, then reads before waiting:
  // the read returns the old contents (the copy lands at the wait) and the checker reports it.
  alignas(16) static float src[32 * 4];
  for (int i = 0; i < 32 * 4; ++i) src[i] = float(i);
  std::vector<float> seen(32, 0.0f);
  auto kernel = [&](bool wait_first) {
    float* s = static_cast<float*>(db::emulation::dynamic_shared_memory());
    const unsigned t = threadIdx.x;
    for (int e = 0; e < 4; ++e) s[4 * t + e] = -1.0f;
    ptx::cp_async(s + 4 * t, src + 4 * t, 16, 16);
    ptx::cp_async_commit_group();
    if (wait_first) ptx::cp_async_wait_group(0);
    seen[t] = s[4 * t + 1];
    ptx::cp_async_wait_group(0);
  };
  std::string fault =
      fault_of(launch_shape(dim3(1), dim3(32), "cp_async_ok", 512), [&] { kernel(true); });
  BOOST_TEST(fault == "");
  BOOST_TEST(seen[3] == 13.0f);
  fault = fault_of(launch_shape(dim3(1), dim3(32), "cp_async_early", 512), [&] { kernel(false); });
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(seen[0] == -1.0f);  // the old contents
  BOOST_TEST(contains(fault, "kernel cp_async_early, block (0,0,0), thread (0,0,0)"));
  BOOST_TEST(contains(fault, "before its cp.async.wait_group"));
}

BOOST_AUTO_TEST_CASE(a_wait_group_off_by_one_is_reported) {
  // Double buffering: tile k+1 is in flight while tile k is used. wait_group(1) leaves exactly the
  // newest group pending; wait_group(2) leaves the tile about to be read pending as well.
  alignas(16) static float src[2][32 * 4];
  for (int i = 0; i < 2 * 32 * 4; ++i) src[i / 128][i % 128] = float(i);
  std::vector<float> sum(32, 0.0f);
  auto kernel = [&](int pending_allowed) {
    float* s = static_cast<float*>(db::emulation::dynamic_shared_memory());
    const unsigned t = threadIdx.x;
    for (int tile = 0; tile < 2; ++tile) {
      ptx::cp_async(s + tile * 128 + 4 * t, src[tile] + 4 * t, 16, 16);
      ptx::cp_async_commit_group();
    }
    ptx::cp_async_wait_group(pending_allowed);  // tile 0 must be done
    __syncthreads();
    sum[t] = s[(4 * t + 4) % 128];  // another thread's copy of tile 0
    ptx::cp_async_wait_group(0);
  };
  std::string fault =
      fault_of(launch_shape(dim3(1), dim3(32), "pipeline_ok", 1024), [&] { kernel(1); });
  BOOST_TEST(fault == "");
  BOOST_TEST(sum[0] == 4.0f);
  fault =
      fault_of(launch_shape(dim3(1), dim3(32), "pipeline_off_by_one", 1024), [&] { kernel(2); });
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(contains(fault, "pipeline_off_by_one"));
  BOOST_TEST(contains(fault, "before its cp.async.wait_group"));
}

BOOST_AUTO_TEST_CASE(refilling_a_shared_buffer_without_a_barrier_is_a_write_after_read_race) {
  // Two tiles through one buffer: every thread reads its neighbour's slot, then the buffer is
  // refilled. Without the barrier between use and refill, a thread overwrites a slot its
  // neighbour has read in the same barrier interval.
  const int threads = 64;
  float* x = device_array<float>(2 * threads);
  for (int i = 0; i < 2 * threads; ++i) x[i] = float(i);
  std::vector<float> acc(threads, 0.0f);
  auto kernel = [&](bool barrier_before_refill, bool with_cp_async) {
    __shared__ float buffer[64];
    const unsigned t = threadIdx.x;
    float sum = 0;
    for (int tile = 0; tile < 2; ++tile) {
      if (tile > 0 && barrier_before_refill) __syncthreads();
      if (with_cp_async) {
        ptx::cp_async(&buffer[t], x + tile * threads + t, 4, 4);
        ptx::cp_async_wait_all();
      } else {
        buffer[t] = x[tile * threads + t];
      }
      __syncthreads();
      sum += buffer[(t + 1) % threads];
    }
    acc[t] = sum;
  };
  for (bool with_cp_async : {false, true}) {
    std::string fault = fault_of(launch_shape(dim3(1), dim3(threads), "refill_ok"),
                                 [&] { kernel(true, with_cp_async); });
    BOOST_TEST(fault == "");
    BOOST_TEST(acc[0] == 1.0f + 65.0f);
    fault = fault_of(launch_shape(dim3(1), dim3(threads), "refill_racy"),
                     [&] { kernel(false, with_cp_async); });
    BOOST_TEST_MESSAGE(fault);
    BOOST_TEST(contains(fault, "shared-memory race (write after read)"));
  }
}

BOOST_AUTO_TEST_CASE(lanes_exchanging_through_shared_memory_need_a_warp_sync) {
  // Within a warp, __syncwarp orders shared accesses; without it the exchange races. Across
  // warps a warp sync orders nothing.
  std::vector<int> out(64, 0);
  auto kernel = [&](bool sync, unsigned partner_xor) {
    __shared__ int s[64];
    const unsigned t = threadIdx.x;
    s[t] = int(t);
    if (sync) __syncwarp();
    out[t] = s[t ^ partner_xor];
  };
  std::string fault =
      fault_of(launch_shape(dim3(1), dim3(64), "warp_exchange"), [&] { kernel(true, 1); });
  BOOST_TEST(fault == "");
  BOOST_TEST(out[6] == 7);
  fault = fault_of(launch_shape(dim3(1), dim3(64), "warp_exchange_unsynced"),
                   [&] { kernel(false, 1); });
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(contains(fault, "shared-memory race"));
  fault = fault_of(launch_shape(dim3(1), dim3(64), "cross_warp"), [&] { kernel(true, 32); });
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(contains(fault, "shared-memory race"));
}

BOOST_AUTO_TEST_CASE(two_threads_writing_one_shared_word_race) {
  std::vector<int> out(1, 0);
  const std::string fault = fault_of(launch_shape(dim3(1), dim3(64), "waw"), [&] {
    __shared__ int flag;
    if (threadIdx.x % 32 == 0) flag = int(threadIdx.x);
    __syncthreads();
    out[0] = flag;
  });
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(contains(fault, "write after write"));
  BOOST_TEST(contains(fault, "thread (32,0,0)"));
  BOOST_TEST(contains(fault, "thread (0,0,0)"));
}

BOOST_AUTO_TEST_CASE(shared_atomics_do_not_race_each_other_but_plain_reads_of_them_do) {
  std::vector<int> out(1, 0);
  std::string fault = fault_of(launch_shape(dim3(1), dim3(128), "atomic_count"), [&] {
    __shared__ int count;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    atomicAdd(&count, 1);
    __syncthreads();
    if (threadIdx.x == 0) out[0] = count;
  });
  BOOST_TEST(fault == "");
  BOOST_TEST(out[0] == 128);
  fault = fault_of(launch_shape(dim3(1), dim3(128), "atomic_then_read"), [&] {
    __shared__ int count;
    if (threadIdx.x == 0) count = 0;
    __syncthreads();
    atomicAdd(&count, 1);
    out[0] = count;  // no barrier after the other threads' atomics
  });
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(contains(fault, "shared-memory race (atomic against a plain read"));
}

BOOST_AUTO_TEST_CASE(checked_kernels_of_a_million_threads_run_in_seconds) {
  // The hook per access must stay cheap: an instrumented elementwise kernel over 2^20 device
  // floats and the shared-memory tree reduction over 4096 blocks of 256 threads. Timings are
  // printed; the bounds only catch a checker gone quadratic.
  const int n = 1 << 20;
  float* x = device_array<float>(n);
  float* y = device_array<float>(n);
  float* sums = device_array<float>(4096);
  for (int i = 0; i < n; ++i) x[i] = 1.0f;
  auto start = std::chrono::steady_clock::now();
  std::clock_t cpu_start = std::clock();
  BOOST_TEST(fault_of(launch_shape(dim3(n / 256), dim3(256), "double"),
                      [&] { double_kernel(y, x, n, true); }) == "");
  const double elementwise_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double elementwise_cpu_s = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  start = std::chrono::steady_clock::now();
  cpu_start = std::clock();
  BOOST_TEST(fault_of(launch_shape(dim3(4096), dim3(256), "tree_sum"),
                      [&] { tree_sum_kernel(sums, x, true); }) == "");
  const double reduction_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double reduction_cpu_s = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  BOOST_TEST(y[n - 1] == 2.0f);
  BOOST_TEST(sums[4095] == 256.0f);
  std::printf(
      "checked timing: elementwise 2^20 threads %.3f s (cpu %.3f s), reduction 4096 x 256 "
      "threads %.3f s (cpu %.3f s)\n",
      elementwise_s, elementwise_cpu_s, reduction_s, reduction_cpu_s);
  BOOST_TEST(elementwise_s < 60.0);
  BOOST_TEST(reduction_s < 60.0);
}

BOOST_AUTO_TEST_CASE(static_and_dynamic_shared_memory_over_227_kib_is_a_fault) {
  // The static arrays' size is not known at launch under emulation; the checker counts the
  // static shared bytes a block touches and adds the launch's dynamic size.
  std::vector<char> out(256, 0);
  auto kernel = [&] {
    // 200 KiB of 2-byte values: the checker's shadow cells are 2 bytes (bf16, the smallest type
    // the backend keeps in shared memory), so neighbouring threads own whole cells.
    __shared__ uint16_t big[100 * 1024];
    const unsigned count = sizeof(big) / sizeof(big[0]);
    for (unsigned i = threadIdx.x; i < count; i += blockDim.x) big[i] = 1;
    __syncthreads();
    out[threadIdx.x] = char(big[count - 1 - threadIdx.x]);
  };
  BOOST_TEST(fault_of(launch_shape(dim3(1), dim3(256), "fits", 20 * 1024), kernel) == "");
  const std::string fault =
      fault_of(launch_shape(dim3(1), dim3(256), "too_much_shared", 40 * 1024), kernel);
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(contains(fault, "over the 227 KiB"));
}

extern "C" void __tsan_read4(void*);
extern "C" void __tsan_write16(void*);

BOOST_AUTO_TEST_CASE(the_hooks_check_nothing_outside_kernels) {
  // Host code of an instrumented file (the backend's launchers, the runtime's callers) touches
  // device memory freely: outside a kernel a hook returns without a check.
  float* x = device_array<float>(4);
  __tsan_read4(x + 1000);  // far past the allocation: would be out of bounds in a kernel
  __tsan_write16(x + 1000);
  BOOST_TEST(fault_of(launch_shape(dim3(1), dim3(1), "after"), [&] { x[0] = 1.0f; }) == "");
}

BOOST_AUTO_TEST_CASE(reading_a_slot_before_writing_it_is_uninitialised_even_when_written_later) {
  // s[t] += x: the read of s[t] comes before any write (a missing zero-initialisation).
  std::vector<float> out(32, 0.0f);
  const std::string fault = fault_of(launch_shape(dim3(1), dim3(32), "missing_zero"), [&] {
    __shared__ float s[32];
    s[threadIdx.x] += 1.0f;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
  });
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(contains(fault, "kernel missing_zero, block (0,0,0), thread (0,0,0)"));
  BOOST_TEST(contains(fault, "never wrote (uninitialised)"));
}

namespace {
__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
// The backend's block_sum (ops/cuda/kernel_util.cuh): every warp reads the warps' partials,
// lanes past the number of warps read nothing (no false "uninitialised" on the 24 unused slots),
// and a second call synchronises before it rewrites the scratch.
__device__ float block_sum(float v, float* scratch) {
  const int lane = int(threadIdx.x) & 31, warp = int(threadIdx.x) >> 5,
            warps = int(blockDim.x) >> 5;
  v = warp_sum(v);
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0f;
  return warp_sum(v);
}
}  // namespace

BOOST_AUTO_TEST_CASE(the_backends_block_sum_called_twice_runs_clean) {
  std::vector<float> out(256, 0.0f);
  const std::string fault = fault_of(launch_shape(dim3(2), dim3(256), "block_sum_twice"), [&] {
    __shared__ float scratch[32];
    const float a = block_sum(1.0f, scratch);
    const float b = block_sum(float(threadIdx.x), scratch);
    if (blockIdx.x == 1) out[threadIdx.x] = a + b;
  });
  BOOST_TEST(fault == "");
  BOOST_TEST(out[17] == 256.0f + 255.0f * 256.0f / 2.0f);
}
