// The threads that share one row of a per-row function: the generic launchers' per-row functors
// (ops/launch.hpp: for_each_row_lanes, for_each_row_sum_lanes) and MoDA's depth merge
// (ops/moda_depth_merge.hpp). A function loops over its columns with
//   for (int j = lanes.first(); j < d; j += lanes.step())
// and reduces a partial over the row with lanes.sum(part), which every lane receives in the same
// bits; lanes.leader() is the one lane that writes a row's single values. kCount (= step()) is a
// compile-time constant, so that a function can size per-lane register arrays with it.
//
// On the host one lane takes the whole row (HostLanes), so these are the plain serial loops; on a
// GPU a warp shares the row (WarpLanes, ops/cuda/kernel_util.cuh), its 32 threads reading a
// row side by side.
#pragma once
#include "core/device_unroll.hpp"
#include "core/host_device.hpp"

namespace db {

// The threads of a GPU warp, and the order in which they add their partials (warp_sum in
// ops/cuda/kernel_util.cuh, behind WarpLanes::sum): a butterfly, where at offsets 16, 8, 4, 2, 1
// each lane adds the value of the lane whose id differs in that bit, v = v + partner(v, offset).
// Written once here so that the host's emulation of a warp (tests/support/emulated_warp.hpp)
// adds in the GPU's order: partner(v, offset) is __shfl_xor_sync on the GPU, a look-up in the
// partials the emulated lanes have gathered on the host.
inline constexpr int kWarpLanes = 32;
template <class V, class Partner>
DB_HD V butterfly_sum(V v, const Partner& partner) {
  DB_DEVICE_UNROLL
  for (int offset = kWarpLanes / 2; offset > 0; offset >>= 1) v += partner(v, offset);
  return v;
}

struct HostLanes {
  static constexpr int kCount = 1;
  DB_HD int first() const { return 0; }
  DB_HD int step() const { return kCount; }
  DB_HD bool leader() const { return true; }
  template <class A>
  DB_HD A sum(A part) const {
    return part;
  }
};

}  // namespace db
