// The SIMT model of the emulated CUDA device (src/emulation/simt/): thread and block indices,
// __syncthreads with barrier-divergence detection, static and dynamic shared memory with the
// H100/H200 launch limits, 32-lane warps whose collectives honour their masks, atomics, and how
// long a grid of a million threads takes. Kernels here are plain functions run by run_grid, the
// way the emulated runtime launches the backend's kernels.
#define BOOST_TEST_MODULE simt_model
#include <cuda_runtime.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <numeric>
#include <string>
#include <vector>

#include "emulation/grid_faults.hpp"
#include "emulation/simt/device_api.hpp"
#include "emulation/simt/fault.hpp"
#include "emulation/simt/grid.hpp"

using db::emulation::DeviceFault;
using db::emulation::LaunchShape;
using db::emulation::run_grid;

namespace {

using db::test::contains;
using db::test::fault_of;
using db::test::launch_shape;

// ---- kernels -----------------------------------------------------------------------------------

__device__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One sum per block: warp sums through shuffles, then warp 0 sums the warps' partials.
__global__ void block_sum_kernel(float* out, const float* x, int n) {
  __shared__ float partial[32];
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  const float v = warp_sum(i < n ? x[i] : 0.0f);
  const int warp = int(threadIdx.x) / warpSize, lane = int(threadIdx.x) % warpSize;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    const int warps = int(blockDim.x) / warpSize;
    const float s = warp_sum(lane < warps ? partial[lane] : 0.0f);
    if (lane == 0) out[blockIdx.x] = s;
  }
}

__global__ void scale_kernel(float* y, const float* x, float a, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = a * x[i];
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_thread_of_a_3d_grid_runs_once_with_its_own_indices) {
  // A wrong index mapping (x/y/z swapped, a block or thread skipped or run twice) breaks the
  // one-to-one map from (block, thread) to cells.
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  const int threads = 3 * 2 * 2 * 4 * 3 * 2;
  std::vector<int> hits(threads, 0);
  std::vector<unsigned> code(threads, 0);
  run_grid(launch_shape(grid, block), [&] {
    BOOST_REQUIRE(blockDim.x == 4 && blockDim.y == 3 && blockDim.z == 2);
    BOOST_REQUIRE(gridDim.x == 3 && gridDim.y == 2 && gridDim.z == 2);
    const unsigned block_id = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    const unsigned thread_id = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const unsigned cell = block_id * 24 + thread_id;
    ++hits[cell];
    code[cell] = threadIdx.x | threadIdx.y << 4 | threadIdx.z << 8 | blockIdx.x << 12 |
                 blockIdx.y << 16 | blockIdx.z << 20;
  });
  for (int cell = 0; cell < threads; ++cell) {
    BOOST_TEST(hits[cell] == 1);
    const unsigned t = unsigned(cell % 24), b = unsigned(cell / 24);
    const unsigned expected = (t % 4) | (t / 4 % 3) << 4 | (t / 12) << 8 | (b % 3) << 12 |
                              (b / 3 % 2) << 16 | (b / 6) << 20;
    BOOST_TEST(code[cell] == expected);
  }
}

BOOST_AUTO_TEST_CASE(block_reduction_with_shuffles_and_shared_memory_matches_the_serial_sum) {
  // Integers as floats: every partial sum is exact, so any lost lane, wrong shuffle partner or
  // missing barrier changes the result.
  const int n = 1000, threads = 256, blocks = (n + threads - 1) / threads;
  std::vector<float> x(n), out(blocks, -1.0f);
  for (int i = 0; i < n; ++i) x[i] = float(i % 97);
  run_grid(launch_shape(dim3(blocks), dim3(threads)),
           [&] { block_sum_kernel(out.data(), x.data(), n); });
  for (int b = 0; b < blocks; ++b) {
    float expected = 0;
    for (int i = b * threads; i < std::min(n, (b + 1) * threads); ++i) expected += x[i];
    BOOST_TEST(out[b] == expected);
  }
}

BOOST_AUTO_TEST_CASE(a_barrier_makes_every_threads_shared_write_visible) {
  // Thread i reads its neighbour's slot after the barrier: without a real barrier (threads run
  // to completion one after another) thread i would see the neighbour's slot unwritten.
  const int threads = 128;
  std::vector<int> out(threads, -1);
  run_grid(launch_shape(dim3(2), dim3(threads)), [&] {
    __shared__ int slot[128];
    slot[threadIdx.x] = int(threadIdx.x + 1000 * blockIdx.x);
    __syncthreads();
    if (blockIdx.x == 1) out[threadIdx.x] = slot[(threadIdx.x + 1) % 128];
  });
  for (int i = 0; i < threads; ++i) BOOST_TEST(out[i] == (i + 1) % threads + 1000);
}

BOOST_AUTO_TEST_CASE(a_thread_that_exits_while_others_wait_at_a_barrier_is_a_fault) {
  const std::string fault = fault_of(launch_shape(dim3(1), dim3(64), "early_exit"), [] {
    if (threadIdx.x < 16) return;  // a divergent early return before a block-wide barrier
    __syncthreads();
  });
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(contains(fault, "early_exit"));
  BOOST_TEST(contains(fault, "cannot make progress"));
  BOOST_TEST(contains(fault, "threads 16-63 wait at __syncthreads"));
  BOOST_TEST(contains(fault, "threads 0-15 exited"));
}

BOOST_AUTO_TEST_CASE(threads_meeting_at_different_barriers_pass_when_all_arrive) {
  // CUDA counts arrivals, not call sites: two barrier statements reached by complementary halves
  // still release the block.
  std::vector<int> out(64, 0);
  const std::string fault = fault_of(launch_shape(dim3(1), dim3(64)), [&] {
    __shared__ int s[64];
    s[threadIdx.x] = int(threadIdx.x);
    if (threadIdx.x < 32)
      __syncthreads();
    else
      __syncthreads();
    out[threadIdx.x] = s[63 - threadIdx.x];
  });
  BOOST_TEST(fault == "");
  for (int i = 0; i < 64; ++i) BOOST_TEST(out[i] == 63 - i);
}

BOOST_AUTO_TEST_CASE(a_barrier_some_threads_never_reach_is_a_fault_naming_both_sides) {
  // Half the block waits at a barrier, the other half at a second barrier after a loop the first
  // half never finishes: a deadlock on a GPU, a fault here.
  const std::string fault = fault_of(launch_shape(dim3(2), dim3(64), "two_barriers"), [] {
    if (threadIdx.x >= 32) {
      __syncthreads();
      __syncthreads();
    } else {
      __syncthreads();
    }
  });
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(contains(fault, "block (0,0,0)"));
  BOOST_TEST(contains(fault, "threads 32-63 wait at __syncthreads"));
  BOOST_TEST(contains(fault, "threads 0-31 exited"));
}

BOOST_AUTO_TEST_CASE(launches_over_the_h200_limits_are_refused) {
  using db::emulation::check_launch;
  BOOST_TEST(check_launch(launch_shape(dim3(1), dim3(1024))) == cudaSuccess);
  BOOST_TEST(check_launch(launch_shape(dim3(1), dim3(1025))) == cudaErrorInvalidConfiguration);
  BOOST_TEST(check_launch(launch_shape(dim3(1), dim3(32, 32, 2))) == cudaErrorInvalidConfiguration);
  BOOST_TEST(check_launch(launch_shape(dim3(1), dim3(1, 1, 65))) == cudaErrorInvalidConfiguration);
  BOOST_TEST(check_launch(launch_shape(dim3(1), dim3(0))) == cudaErrorInvalidConfiguration);
  BOOST_TEST(check_launch(launch_shape(dim3(1, 65536), dim3(32))) == cudaErrorInvalidConfiguration);
  BOOST_TEST(check_launch(launch_shape(dim3(2147483647u), dim3(32))) == cudaSuccess);
  // Dynamic shared memory: 48 KiB without the opt-in attribute, up to 227 KiB with it.
  BOOST_TEST(check_launch(launch_shape(dim3(1), dim3(32), "test", 48 * 1024)) == cudaSuccess);
  BOOST_TEST(check_launch(launch_shape(dim3(1), dim3(32), "test", 48 * 1024 + 1)) ==
             cudaErrorInvalidValue);
  LaunchShape opted = launch_shape(dim3(1), dim3(32), "test", 232448);
  opted.max_dynamic_shared_bytes = 232448;
  BOOST_TEST(check_launch(opted) == cudaSuccess);
  opted.dynamic_shared_bytes = 232449;
  BOOST_TEST(check_launch(opted) == cudaErrorInvalidValue);
  opted.max_dynamic_shared_bytes = 232449;  // more than a device allows
  BOOST_TEST(check_launch(opted) == cudaErrorInvalidValue);
  // run_grid refuses too, before any thread runs.
  bool ran = false;
  const std::string fault =
      fault_of(launch_shape(dim3(1), dim3(32), "big_smem", 64 * 1024), [&] { ran = true; });
  BOOST_TEST(contains(fault, "big_smem"));
  BOOST_TEST(contains(fault, "cudaErrorInvalidValue"));
  BOOST_TEST(!ran);
}

BOOST_AUTO_TEST_CASE(dynamic_shared_memory_is_one_aligned_buffer_per_block_and_starts_undefined) {
  // The buffer is shared by the block's threads, 16-byte aligned, sized by the launch; a block
  // does not inherit what the previous block left (it is poisoned to NaN bytes).
  std::vector<float> seen(4, 0.0f);
  std::vector<int> aligned(4, 0);
  run_grid(launch_shape(dim3(4), dim3(64), "test", 64 * sizeof(float)), [&] {
    float* s = static_cast<float*>(db::emulation::dynamic_shared_memory());
    if (threadIdx.x == 0) {
      seen[blockIdx.x] = s[63];  // before anyone of this block wrote it
      aligned[blockIdx.x] = reinterpret_cast<uintptr_t>(s) % 16 == 0;
    }
    __syncthreads();
    s[threadIdx.x] = float(threadIdx.x);
    __syncthreads();
  });
  for (int b = 0; b < 4; ++b) {
    BOOST_TEST(std::isnan(seen[b]));
    BOOST_TEST(aligned[b] == 1);
  }
}

BOOST_AUTO_TEST_CASE(static_shared_arrays_are_one_array_per_block) {
  // Thread 0 writes, the others read after the barrier: one array for the block (not one per
  // thread), and a kernel instantiated twice has two arrays.
  std::vector<int> out(96, 0);
  run_grid(launch_shape(dim3(3), dim3(32)), [&] {
    __shared__ int value;
    if (threadIdx.x == 0) value = int(blockIdx.x) + 7;
    __syncthreads();
    out[blockIdx.x * 32 + threadIdx.x] = value;
  });
  for (int i = 0; i < 96; ++i) BOOST_TEST(out[i] == i / 32 + 7);
}

BOOST_AUTO_TEST_CASE(shuffles_follow_the_ptx_source_lane_rules) {
  // idx, up, down and xor shuffles over segments of 8 lanes: sources outside the segment keep
  // the lane's own value.
  std::vector<int> idx(32), up(32), down(32), bfly(32);
  run_grid(launch_shape(dim3(1), dim3(32)), [&] {
    const int lane = int(threadIdx.x), v = 100 + lane;
    idx[lane] = __shfl_sync(0xffffffffu, v, 3, 8);
    up[lane] = __shfl_up_sync(0xffffffffu, v, 2, 8);
    down[lane] = __shfl_down_sync(0xffffffffu, v, 3, 8);
    bfly[lane] = __shfl_xor_sync(0xffffffffu, v, 9, 8);  // 9 leaves every 8-lane segment
  });
  for (int lane = 0; lane < 32; ++lane) {
    const int seg = lane / 8 * 8, in_seg = lane % 8;
    BOOST_TEST(idx[lane] == 100 + seg + 3);
    BOOST_TEST(up[lane] == 100 + (in_seg >= 2 ? lane - 2 : lane));
    BOOST_TEST(down[lane] == 100 + (in_seg + 3 < 8 ? lane + 3 : lane));
    BOOST_TEST(bfly[lane] == 100 + lane);  // lane ^ 9 is in another segment
  }
}

BOOST_AUTO_TEST_CASE(a_partial_mask_gathers_only_its_lanes) {
  // The low half votes and shuffles among itself while the high half does something else; the
  // ballot holds only the low half's votes.
  std::vector<unsigned> votes(32, 0);
  std::vector<int> sums(32, 0);
  run_grid(launch_shape(dim3(1), dim3(32)), [&] {
    const int lane = int(threadIdx.x);
    if (lane < 16) {
      votes[lane] = __ballot_sync(0x0000ffffu, lane % 3 == 0);
      int v = lane;
      for (int o = 8; o > 0; o /= 2) v += __shfl_xor_sync(0x0000ffffu, v, o);
      sums[lane] = v;
    } else {
      votes[lane] = __ballot_sync(0xffff0000u, true);
    }
  });
  unsigned expected = 0;
  for (int lane = 0; lane < 16; lane += 3) expected |= 1u << lane;
  for (int lane = 0; lane < 16; ++lane) {
    BOOST_TEST(votes[lane] == expected);
    BOOST_TEST(sums[lane] == 120);
  }
  for (int lane = 16; lane < 32; ++lane) BOOST_TEST(votes[lane] == 0xffff0000u);
}

BOOST_AUTO_TEST_CASE(a_lane_named_in_the_mask_that_never_arrives_is_a_fault) {
  const std::string fault = fault_of(launch_shape(dim3(1), dim3(32), "lost_lane"), [] {
    if (threadIdx.x == 5) return;
    (void)__shfl_xor_sync(0xffffffffu, 1.0f, 1);
  });
  BOOST_TEST_MESSAGE(fault);
  BOOST_TEST(contains(fault, "__shfl_xor_sync"));
  BOOST_TEST(contains(fault, "waits for lanes 5"));
  BOOST_TEST(contains(fault, "threads 5 exited"));
}

BOOST_AUTO_TEST_CASE(reading_a_lane_outside_the_mask_or_a_mask_without_oneself_is_a_fault) {
  std::string fault = fault_of(launch_shape(dim3(1), dim3(32)), [] {
    if (threadIdx.x < 16) (void)__shfl_xor_sync(0x0000ffffu, 1, 16);  // partner out of the mask
  });
  // lane ^ 16 stays in the 32-lane segment but is not a participant.
  BOOST_TEST(contains(fault, "not in the mask"));
  fault = fault_of(launch_shape(dim3(1), dim3(32)), [] { (void)__ballot_sync(0x1u, true); });
  BOOST_TEST(contains(fault, "does not name the calling lane"));
}

BOOST_AUTO_TEST_CASE(any_and_all_votes_and_syncwarp) {
  std::vector<int> any(64), all(64);
  run_grid(launch_shape(dim3(1), dim3(64)), [&] {
    const int t = int(threadIdx.x);
    any[t] = __any_sync(0xffffffffu, t == 40);
    __syncwarp();
    all[t] = __all_sync(0xffffffffu, t < 32);
  });
  for (int t = 0; t < 64; ++t) {
    BOOST_TEST(any[t] == (t >= 32 ? 1 : 0));
    BOOST_TEST(all[t] == (t < 32 ? 1 : 0));
  }
}

BOOST_AUTO_TEST_CASE(a_partial_last_warp_collects_only_its_existing_lanes) {
  // 40 threads: warp 1 has lanes 0-7 only; a full mask names lanes that do not exist. A vote
  // gathers the existing ones; a shuffle reading a lane that does not exist reads an undefined
  // value and is a fault.
  std::vector<unsigned> votes(40, 0);
  run_grid(launch_shape(dim3(1), dim3(40)),
           [&] { votes[threadIdx.x] = __ballot_sync(0xffffffffu, true); });
  BOOST_TEST(votes[0] == 0xffffffffu);
  BOOST_TEST(votes[39] == 0xffu);
  const std::string fault = fault_of(launch_shape(dim3(1), dim3(40)), [] {
    int v = 1;
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffffu, v, o);
  });
  BOOST_TEST(contains(fault, "lane 0 reads lane 16, which is not in the mask"));
}

BOOST_AUTO_TEST_CASE(atomics_from_every_thread_add_up) {
  int counter = 0;
  float total = 0.0f;
  unsigned long long big = 0;
  int highest = -1;
  run_grid(launch_shape(dim3(8), dim3(128)), [&] {
    atomicAdd(&counter, 1);
    atomicAdd(&total, 0.5f);
    atomicAdd(&big, 1ull << 33);
    atomicMax(&highest, int(blockIdx.x * 1000 + threadIdx.x));
  });
  BOOST_TEST(counter == 1024);
  BOOST_TEST(total == 512.0f);
  BOOST_TEST(big == (1ull << 33) * 1024);
  BOOST_TEST(highest == 7127);
}

BOOST_AUTO_TEST_CASE(an_exception_in_a_kernel_is_a_device_fault_naming_the_thread) {
  const std::string fault = fault_of(launch_shape(dim3(2), dim3(8), "throwing"), [] {
    if (blockIdx.x == 1 && threadIdx.x == 3) throw std::runtime_error("boom");
  });
  BOOST_TEST(contains(fault, "kernel throwing, block (1,0,0), thread (3,0,0)"));
  BOOST_TEST(contains(fault, "boom"));
  // The device stays usable after a fault.
  int ran = 0;
  run_grid(launch_shape(dim3(1), dim3(4)), [&] { ++ran; });
  BOOST_TEST(ran == 4);
}

BOOST_AUTO_TEST_CASE(a_million_thread_grid_and_4096_block_reductions_run_in_seconds) {
  // Scale: the emulated gpu tests run kernels of up to ~1e6 threads. Timings are printed; the
  // bounds are loose (a debug or instrumented build is slower) and catch a scheduler gone
  // quadratic.
  const int n = 1 << 20;
  std::vector<float> x(n), y(n);
  std::iota(x.begin(), x.end(), 0.0f);
  auto start = std::chrono::steady_clock::now();
  std::clock_t cpu_start = std::clock();
  run_grid(launch_shape(dim3(n / 256), dim3(256)),
           [&] { scale_kernel(y.data(), x.data(), 2.0f, n); });
  const double elementwise_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double elementwise_cpu_s = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  BOOST_TEST(y[n - 1] == 2.0f * float(n - 1));

  const int blocks = 4096, threads = 256;
  std::vector<float> v(size_t(blocks) * threads, 1.0f), sums(blocks, 0.0f);
  start = std::chrono::steady_clock::now();
  cpu_start = std::clock();
  run_grid(launch_shape(dim3(blocks), dim3(threads)),
           [&] { block_sum_kernel(sums.data(), v.data(), blocks * threads); });
  const double reduction_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double reduction_cpu_s = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
  BOOST_TEST(sums[blocks - 1] == float(threads));
  std::printf(
      "simt timing: elementwise 2^20 threads %.3f s (cpu %.3f s), reduction 4096 x 256 "
      "threads %.3f s (cpu %.3f s)\n",
      elementwise_s, elementwise_cpu_s, reduction_s, reduction_cpu_s);
  BOOST_TEST(elementwise_s < 30.0);
  BOOST_TEST(reduction_s < 30.0);
}
