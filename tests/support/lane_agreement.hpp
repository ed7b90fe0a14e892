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
#include <vector>

namespace db::test {

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

// Checks that `warp` agrees with `host` within `tolerance` (relative_difference), and logs the
// difference (run with --log_level=message to see the numbers behind the tolerances).
template <class T>
void check_agreement(const std::string& what, const std::vector<T>& warp,
                     const std::vector<T>& host, double tolerance) {
  const double difference = relative_difference(warp, host);
  BOOST_TEST_MESSAGE(what << ": " << difference << " (tolerance " << tolerance << ")"
                          << (same_bits(warp, host) ? ", same bits" : ""));
  BOOST_TEST(difference <= tolerance, what << ": differs by " << difference << " > " << tolerance);
}

}  // namespace db::test
