// Comparing a lane functor's results on an emulated warp (support/emulated_warp.hpp) with its
// results on the host's one lane: the same terms summed in another order (each lane its stride,
// then the butterfly), so they agree to rounding, and where the code claims the same bits, bit for
// bit. Included by Boost.Test files.
#pragma once
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ops/launch.hpp"
#include "support/emulated_warp.hpp"

namespace db::test {

// The two ways a test runs a lane functor: the host launchers (one lane per row) and the emulated
// warp (32 lanes per row, as ops/cuda/launch.cuh launches them).
struct HostRows {
  template <class F>
  void lanes(int64_t rows, const F& f) const {
    for_each_row_lanes(MemorySpace::host, rows, f);
  }
  template <class T, class F>
  void sum_lanes(int64_t rows, const SumTargets<T>& targets, const F& f) const {
    for_each_row_sum_lanes(MemorySpace::host, rows, targets, f);
  }
};
struct WarpRows {
  template <class F>
  void lanes(int64_t rows, const F& f) const {
    emulated_row_lanes(rows, f);
  }
  template <class T, class F>
  void sum_lanes(int64_t rows, const SumTargets<T>& targets, const F& f) const {
    emulated_row_sum_lanes(rows, targets, f);
  }
};

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Largest |a − b| over the largest |b| (0 when both are all zeros).
template <class T>
double relative_difference(const std::vector<T>& a, const std::vector<T>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// How far two orders of the same sums may move a result T: reordering a sum of n terms in the
// accumulator type A moves it by at most 2(n − 1)·u_A·Σ|term|, and the result is rounded to T
// (half an ulp each way). `slack` covers the few roundings the results pass through after the sums
// (a rstd into a product, logits through exp and a division) and Σ|term| over the largest result:
// random terms of both signs, whose sums stay well conditioned.
template <class T, class A>
double reorder_tolerance(int n, double slack = 8) {
  return slack * (std::numeric_limits<T>::epsilon() + 2.0 * n * std::numeric_limits<A>::epsilon());
}

// Checks that `warp` agrees with `host` within `tolerance` (relative_difference; 0: the same
// bits), and logs the difference (run with --log_level=message to see the numbers behind the
// tolerances).
template <class T>
void check_agreement(const std::string& what, const std::vector<T>& warp,
                     const std::vector<T>& host, double tolerance) {
  const double difference = relative_difference(warp, host);
  BOOST_TEST_MESSAGE(what << ": " << difference << " (tolerance " << tolerance << ")"
                          << (same_bits(warp, host) ? ", same bits" : ""));
  if (tolerance == 0)
    BOOST_TEST(same_bits(warp, host), what << ": not the same bits");
  else
    BOOST_TEST(difference <= tolerance,
               what << ": differs by " << difference << " > " << tolerance);
}

// One result array of a run; `exact`: no sum spans the lanes, so the warp must give the host's
// bits (the lanes only share out the values; in a build without contraction of a·b + c, which
// the compiler may decide differently for the two instantiations).
template <class T>
struct Result {
  std::string name;
  std::vector<T> values;
  bool exact = false;
};
template <class T>
using Results = std::vector<Result<T>>;

// run(rows) (rows: HostRows or WarpRows) computes a functor's results from inputs it fixes; checks
// that the warp's agree with the host's (within `tolerance`, or bit for bit where exact) and that
// a second run on the warp gives the same bits. Returns the warp's results.
template <class T, class Run>
Results<T> check_on_warp(const std::string& shape, double tolerance, const Run& run) {
  const Results<T> host = run(HostRows{}), warp = run(WarpRows{}), again = run(WarpRows{});
  for (size_t i = 0; i < host.size(); ++i) {
    const std::string what = warp[i].name + ", " + shape;
    check_agreement(what, warp[i].values, host[i].values, warp[i].exact ? 0.0 : tolerance);
    BOOST_TEST(same_bits(warp[i].values, again[i].values), what << ": a second run, other bits");
  }
  return warp;
}

}  // namespace db::test
