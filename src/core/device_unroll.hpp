// Loops over a thread's small arrays in DB_HD code. On a GPU such a loop must run a constant
// number of times and be unrolled, so that the arrays are indexed by constants and stay in
// registers instead of local memory; on the host a plain counted loop serves better (the
// compiler vectorises it):
//   DB_DEVICE_UNROLL
//   for (int c = 0; c < register_loop_bound<K>(count); ++c) {
//     if (c >= count) break;  // on a GPU, the slots past count
//     ...
//
// DB_DEVICE_LOOPS says which form runs: the GPU's (constant trip counts, constant indices) in
// device code, and on the host too where a test defines DB_EMULATE_DEVICE_LOOPS, so that the
// host's emulation of a warp (tests/support/emulated_warp.hpp) runs the loops as a GPU runs them,
// and in the files compiled for the emulated device (DEPTHBENCH_CUDA_EMULATION), where one
// compilation serves the host loops and the kernels.
#pragma once
#include "core/host_device.hpp"

#if defined(__CUDA_ARCH__) || defined(DB_EMULATE_DEVICE_LOOPS) || defined(DEPTHBENCH_CUDA_EMULATION)
#define DB_DEVICE_LOOPS 1
#else
#define DB_DEVICE_LOOPS 0
#endif

#if defined(__CUDA_ARCH__)
#define DB_DEVICE_UNROLL _Pragma("unroll")
#else
#define DB_DEVICE_UNROLL
#endif

namespace db {

// The trip count of a loop over the first `count` of K slots: K on a GPU, count on the host.
template <int K>
DB_HD int register_loop_bound(int count) {
#if DB_DEVICE_LOOPS
  (void)count;
  return K;
#else
  return count;
#endif
}

}  // namespace db
