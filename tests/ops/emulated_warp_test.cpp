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
#include <stdexcept>
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

// MoDA's depth merge forward and backward for every (token, head) of shape s, with the lanes
// `run` gives (run(body) calls body(lanes) on every lane), A the accumulator type.
template <class T>
struct ModaResults {
  std::vector<T> o, lse, dq, d_depth_k, d_depth_v;
};

template <class A, class T, class Run>
ModaResults<T> merge(const ModaShape& s, uint64_t seed, const Run& run) {
  const int64_t rows = s.batch * s.seq_len;
  const size_t q_size = size_t(rows) * s.heads * s.head_dim,
               depth_size = size_t(rows) * s.depth_stride * s.kv_heads * s.head_dim;
  const std::vector<T> q = random_vector<T>(q_size, seed),
                       depth_k = random_vector<T>(depth_size, seed + 1),
                       depth_v = random_vector<T>(depth_size, seed + 2),
                       d_o = random_vector<T>(q_size, seed + 3);
  ModaResults<T> out{random_vector<T>(q_size, seed + 4),
                     random_vector<T>(size_t(rows) * s.heads, seed + 5),
                     random_vector<T>(q_size, seed + 6), random_vector<T>(depth_size, seed + 7),
                     random_vector<T>(depth_size, seed + 8)};
  run([&](const auto& lanes) {
    for (int64_t n = 0; n < rows; ++n)
      for (int h = 0; h < s.heads; ++h)
        moda_merge::forward_row<A>(out.o.data(), out.lse.data(), q.data(), depth_k.data(),
                                   depth_v.data(), s, n, h, lanes);
  });
  run([&](const auto& lanes) {
    for (int64_t n = 0; n < rows; ++n)
      for (int g = 0; g < s.kv_heads; ++g)
        moda_merge::backward_row<A>(out.dq.data(), out.d_depth_k.data(), out.d_depth_v.data(),
                                    d_o.data(), out.o.data(), out.lse.data(), q.data(),
                                    depth_k.data(), depth_v.data(), s, n, g, lanes);
  });
  return out;
}

template <class A, class T>
void check_moda_merge(int head_dim) {
  const ModaShape s{1, 2, 4, 2, head_dim, 3, 4};
  const auto on_host = [](const auto& body) { body(HostLanes{}); };
  const auto on_warp = [](const auto& body) { run_on_emulated_warp(body); };
  const ModaResults<T> host = merge<A, T>(s, 60, on_host), warp = merge<A, T>(s, 60, on_warp),
                       again = merge<A, T>(s, 60, on_warp);
  // The longest sum is a dot product over the head dim; o and the gradients pass through exp.
  const double tolerance = reorder_tolerance<T, A>(head_dim);
  const std::string shape = std::to_string(sizeof(A) * 8) + "-bit, hd " + std::to_string(head_dim);
  check_agreement("moda merge o, " + shape, warp.o, host.o, tolerance);
  check_agreement("moda merge lse, " + shape, warp.lse, host.lse, tolerance);
  check_agreement("moda merge dq, " + shape, warp.dq, host.dq, tolerance);
  check_agreement("moda merge d_depth_k, " + shape, warp.d_depth_k, host.d_depth_k, tolerance);
  check_agreement("moda merge d_depth_v, " + shape, warp.d_depth_v, host.d_depth_v, tolerance);
  BOOST_TEST((same_bits(warp.o, again.o) && same_bits(warp.lse, again.lse) &&
              same_bits(warp.dq, again.dq) && same_bits(warp.d_depth_k, again.d_depth_k) &&
              same_bits(warp.d_depth_v, again.d_depth_v)),
             "a second run: the same bits, " << shape);
}

}  // namespace

BOOST_AUTO_TEST_CASE(moda_depth_merge_on_a_warp_agrees_with_one_lane) {
  for (int head_dim : {1, 5, 31, 32, 33, 100, 128, 255, moda_merge::kMaxHeadDim}) {
    check_moda_merge<double, double>(head_dim);
    check_moda_merge<float, float>(head_dim);
  }
}
