// The host's emulation of a GPU warp (support/emulated_warp.hpp) and the ops' lane functors on it:
// - its sum is warp_sum's butterfly: the same bits as the shuffles computed one offset at a time
//   (each lane v + partner, all lanes at once), on every lane, on values whose sum depends on the
//   order;
// - lanes that call sum unevenly, and two lanes adding to one column of a row reduction, are
//   reported, not hung on;
// - its for_each_row_sum_lanes adds the chunks of kRowsPerWarpChunk rows as the GPU does: the host
//   launcher's bits where both take one chunk, a rounding apart otherwise;
// - MoDA's depth merge (ops/moda_depth_merge.hpp, one warp per (token, head) on the GPU) on 32
//   lanes agrees with its one-lane run for head dims below, at and above 32 up to kMaxHeadDim,
//   in double and in float (the GPU's accumulator).
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE emulated_warp
#include "support/emulated_warp.hpp"

#include <array>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "ops/moda_depth_merge.hpp"
#include "support/gradcheck.hpp"
#include "support/lane_agreement.hpp"

using namespace db;
using namespace db::test;

namespace {

// Per-lane values of magnitudes 2^-20 .. 2^20 and both signs: their sum depends on the order.
template <class V>
std::array<V, kWarpLanes> spread_values(uint64_t seed) {
  Rng rng(seed);
  std::array<V, kWarpLanes> v;
  for (V& x : v) x = V(rng.normal() * std::ldexp(1.0, int(rng.uniform() * 41) - 20));
  return v;
}

// warp_sum by its definition: at each offset every lane at once adds its partner's value.
template <class V>
std::array<V, kWarpLanes> shuffled_sums(std::array<V, kWarpLanes> v) {
  for (int offset = kWarpLanes / 2; offset > 0; offset >>= 1) {
    std::array<V, kWarpLanes> next;
    for (int l = 0; l < kWarpLanes; ++l) next[l] = v[l] + v[l ^ offset];
    v = next;
  }
  return v;
}

template <class V>
void check_warp_sum() {
  int order_dependent = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::array<V, kWarpLanes> parts = spread_values<V>(seed);
    std::array<V, kWarpLanes> sums;
    run_on_emulated_warp(
        [&](const EmulatedWarpLanes& lanes) { sums[lanes.lane] = lanes.sum(parts[lanes.lane]); });
    BOOST_TEST(std::memcmp(sums.data(), shuffled_sums(parts).data(), sizeof sums) == 0);
    for (V s : sums) BOOST_TEST(std::memcmp(&s, &sums[0], sizeof s) == 0, "every lane: same bits");
    V serial = 0;
    for (V p : parts) serial += p;
    order_dependent += serial != sums[0];
  }
  BOOST_TEST(order_dependent > 0, "the values must tell the butterfly from a serial sum");
}

}  // namespace

BOOST_AUTO_TEST_CASE(emulated_sum_is_warp_sums_butterfly_with_the_same_bits_on_every_lane) {
  check_warp_sum<float>();
  check_warp_sum<double>();
}

BOOST_AUTO_TEST_CASE(lanes_that_sum_unevenly_are_reported) {
  // Lane 7 skips the second sum.
  BOOST_CHECK_THROW(run_on_emulated_warp([](const EmulatedWarpLanes& lanes) {
                      lanes.sum(1.0);
                      if (lanes.lane != 7) lanes.sum(2.0);
                      lanes.sum(3.0f);
                    }),
                    std::logic_error);
  // Lane 0 sums once more than the others, after they have left.
  BOOST_CHECK_THROW(run_on_emulated_warp([](const EmulatedWarpLanes& lanes) {
                      lanes.sum(1.0);
                      if (lanes.leader()) lanes.sum(2.0);
                    }),
                    std::logic_error);
  BOOST_CHECK_NO_THROW(run_on_emulated_warp([](const EmulatedWarpLanes& lanes) {
    for (int i = 0; i < 3; ++i) lanes.sum(double(i));
  }));
}

namespace {

// Row r adds x[r, j]·(r + 1) into column j, each lane into its own columns (as the lane functors'
// parameter gradients); or, racing, every lane into column 0.
struct ColumnSums {
  const double* x;
  int width;
  bool racing;
  template <class Lanes>
  void operator()(int64_t r, double* sums, const Lanes& lanes) const {
    if (racing) {
      sums[0] += 1.0;
      return;
    }
    for (int j = lanes.first(); j < width; j += lanes.step())
      sums[j] += x[r * width + j] * double(r + 1);
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(emulated_row_sums_add_the_gpus_chunks_in_order) {
  const int width = 37;
  for (int64_t rows : {1, 5, 8, 9, 20}) {
    const std::vector<double> x = random_vector(size_t(rows) * width, 40 + rows);
    std::vector<double> host(width, 0.5), warp(width, 0.5);
    SumTargets<double> host_target, warp_target;
    host_target.add(host.data(), width);
    warp_target.add(warp.data(), width);
    for_each_row_sum_lanes(MemorySpace::host, rows, host_target,
                           ColumnSums{x.data(), width, false});
    emulated_row_sum_lanes(rows, warp_target, ColumnSums{x.data(), width, false});
    if (rows <= kRowsPerWarpChunk)  // one chunk on both: the same sums in the same order
      BOOST_TEST(same_bits(warp, host), "rows " << rows);
    else
      check_agreement("rows " + std::to_string(rows), warp, host,
                      reorder_tolerance<double, double>(int(rows)));
  }
  std::vector<double> target(1, 0.0);
  SumTargets<double> one;
  one.add(target.data(), 1);
  BOOST_CHECK_THROW(emulated_row_sum_lanes(3, one, ColumnSums{nullptr, 1, true}), std::logic_error);
}

namespace {

// MoDA's depth merge, forward then backward, on every (token, head) of shape s: a row of the
// launch is an item of the GPU kernels (ops/cuda/moda_depth_merge.cu: a warp per item). A: the
// accumulator type (the GPU's: float).
template <class A, class T, class Rows>
Results<T> moda_merge_results(const ModaShape& s, const Rows& launch) {
  const int64_t rows = s.batch * s.seq_len;
  const size_t q_size = size_t(rows) * s.heads * s.head_dim,
               depth_size = size_t(rows) * s.depth_stride * s.kv_heads * s.head_dim;
  const std::vector<T> q = random_vector<T>(q_size, 60), k = random_vector<T>(depth_size, 61),
                       v = random_vector<T>(depth_size, 62), d_o = random_vector<T>(q_size, 63);
  std::vector<T> o = random_vector<T>(q_size, 64), lse = random_vector<T>(rows * s.heads, 65),
                 dq = random_vector<T>(q_size, 66), dk = random_vector<T>(depth_size, 67),
                 dv = random_vector<T>(depth_size, 68);
  launch.lanes(rows * s.heads, [&](int64_t item, const auto& lanes) {
    moda_merge::forward_row<A>(o.data(), lse.data(), q.data(), k.data(), v.data(), s,
                               item / s.heads, int(item % s.heads), lanes);
  });
  launch.lanes(rows * s.kv_heads, [&](int64_t item, const auto& lanes) {
    moda_merge::backward_row<A>(dq.data(), dk.data(), dv.data(), d_o.data(), o.data(), lse.data(),
                                q.data(), k.data(), v.data(), s, item / s.kv_heads,
                                int(item % s.kv_heads), lanes);
  });
  return {{"moda merge o", o},
          {"moda merge lse", lse},
          {"moda merge dq", dq},
          {"moda merge d_depth_k", dk},
          {"moda merge d_depth_v", dv}};
}

}  // namespace

BOOST_AUTO_TEST_CASE(moda_depth_merge_on_a_warp_agrees_with_one_lane) {
  for (int head_dim : {1, 5, 31, 32, 33, 100, 128, 255, moda_merge::kMaxHeadDim}) {
    // The longest sums are the dot products over the head dim.
    const std::string shape = "hd " + std::to_string(head_dim);
    const ModaShape s{1, 2, 4, 2, head_dim, 3, 4};
    check_on_warp<double>(
        "64-bit, " + shape, reorder_tolerance<double, double>(head_dim),
        [&](const auto& rows) { return moda_merge_results<double, double>(s, rows); });
    check_on_warp<float>(
        "32-bit, " + shape, reorder_tolerance<float, float>(head_dim),
        [&](const auto& rows) { return moda_merge_results<float, float>(s, rows); });
  }
}
