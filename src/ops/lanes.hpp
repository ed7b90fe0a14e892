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
#include "core/host_device.hpp"

namespace db {

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
