// The AttnRes depth softmax forward in one read of its sources (depth_softmax.hpp
// OnePassForward, train.fused_kernels) against the two passes it replaces (Forward), in float
// and double, for 1, 2, 17 and 65 sources (the three source capacities) and widths below, at and
// above a lane's columns, none a multiple of 32 but the capacity itself:
// - rstd and the logits are the same sums in the same order; h and the weights differ by
//   rounding only (the online softmax sums unnormalised, rescaled terms), within a few units of
//   the last place of the largest value;
// - the backward gives the same gradients to rounding whichever forward fed it (the rounding of
//   the weights, magnified where the query and key-gain gradients cancel);
// - rows wider than the one-pass capacity (kMaxOnePassWidth) run the two passes: the same bits.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE depth_softmax
#include "model/residual/depth_softmax.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "support/gradcheck.hpp"

using namespace db;

namespace {

constexpr int64_t kRows = 5;

template <class T>
struct Inputs {
  DepthMixShape shape;
  std::vector<std::vector<T>> sources;
  std::vector<T> query, key_gain, dh;
  std::vector<const T*> pointers() const {
    std::vector<const T*> p;
    for (const std::vector<T>& s : sources) p.push_back(s.data());
    return p;
  }
};

// Logits of a few units: the softmax is neither flat nor one-hot, and the largest logit so far
// changes a few times along the sources.
template <class T>
Inputs<T> make_inputs(int m, int d) {
  Inputs<T> in{{kRows, d, m, 1e-6}, {}, {}, {}, {}};
  for (int i = 0; i < m; ++i) in.sources.push_back(test::random_vector<T>(kRows * d, 30 + i));
  in.query = test::random_vector<T>(d, 20, 3.0 / std::sqrt(double(d)));
  in.key_gain = test::random_vector<T>(d, 21, 0.3);
  for (T& g : in.key_gain) g += T(1);
  in.dh = test::random_vector<T>(kRows * d, 22);
  return in;
}

template <class T>
struct Outputs {
  std::vector<T> h, weights, rstd, dquery, dkey_gain;
  std::vector<std::vector<T>> dsources;
};

// The forward (one pass or two), then the backward it feeds.
template <class T>
Outputs<T> run(const Inputs<T>& in, bool one_pass) {
  const DepthMixShape& s = in.shape;
  Outputs<T> out{std::vector<T>(kRows * s.d),
                 std::vector<T>(kRows * s.sources),
                 std::vector<T>(kRows * s.sources),
                 std::vector<T>(s.d),
                 std::vector<T>(s.d),
                 {}};
  depth_softmax_forward(MemorySpace::host, one_pass, out.h.data(), out.weights.data(),
                        out.rstd.data(), in.pointers(), in.query.data(), in.key_gain.data(), s);
  std::vector<T*> dsources;
  for (int i = 0; i < s.sources; ++i) out.dsources.emplace_back(kRows * s.d, T(0));
  for (std::vector<T>& ds : out.dsources) dsources.push_back(ds.data());
  depth_softmax_backward(MemorySpace::host, dsources, out.dquery.data(), out.dkey_gain.data(),
                         in.dh.data(), in.pointers(), out.weights.data(), out.rstd.data(),
                         in.query.data(), in.key_gain.data(), s);
  return out;
}

// Largest |a − b| over max |b|; 0 when both are all zeros (the query and key-gain gradients of
// a mix over one source: its weight is 1 whatever the logit).
template <class T>
double difference(const std::vector<T>& a, const std::vector<T>& b) {
  return a == b ? 0.0 : test::max_relative_difference(a.data(), b);
}

// The largest difference of any gradient, relative to the largest value of each.
template <class T>
double gradient_difference(const Outputs<T>& a, const Outputs<T>& b) {
  double diff = std::max(difference(a.dquery, b.dquery), difference(a.dkey_gain, b.dkey_gain));
  for (size_t i = 0; i < a.dsources.size(); ++i)
    diff = std::max(diff, difference(a.dsources[i], b.dsources[i]));
  return diff;
}

template <class T>
void check_one_pass_against_two(double tolerance, double gradient_tolerance) {
  double worst_h = 0, worst_weights = 0, worst_rstd = 0, worst_gradients = 0;
  for (int m : {1, 2, 17, 65})
    for (int d : {1, 33, 100, 1024, 1025, 1999}) {
      if (d > kMaxOnePassWidth<T>) continue;
      BOOST_TEST_CONTEXT("m = " << m << ", d = " << d) {
        const Inputs<T> in = make_inputs<T>(m, d);
        const Outputs<T> one = run(in, true), two = run(in, false);
        worst_h = std::max(worst_h, difference(one.h, two.h));
        worst_weights = std::max(worst_weights, difference(one.weights, two.weights));
        worst_rstd = std::max(worst_rstd, difference(one.rstd, two.rstd));
        worst_gradients = std::max(worst_gradients, gradient_difference(one, two));
        BOOST_TEST(difference(one.h, two.h) <= tolerance);
        BOOST_TEST(difference(one.weights, two.weights) <= tolerance);
        BOOST_TEST(difference(one.rstd, two.rstd) <= tolerance);
        BOOST_TEST(gradient_difference(one, two) <= gradient_tolerance);
      }
    }
  BOOST_TEST_MESSAGE(sizeof(T) * 8 << "-bit, one pass against two, largest relative difference: h "
                                   << worst_h << ", weights " << worst_weights << ", rstd "
                                   << worst_rstd << ", gradients " << worst_gradients);
}

template <class T>
void check_wide_rows_run_two_passes() {
  const Inputs<T> in = make_inputs<T>(17, kMaxOnePassWidth<T> + 1);
  const Outputs<T> one = run(in, true), two = run(in, false);
  BOOST_TEST(one.h == two.h);
  BOOST_TEST(one.weights == two.weights);
  BOOST_TEST(one.rstd == two.rstd);
  BOOST_TEST(one.dsources == two.dsources);
  BOOST_TEST(one.dquery == two.dquery);
  BOOST_TEST(one.dkey_gain == two.dkey_gain);
}

}  // namespace

// Tolerances: 16 units of the last place (2⁻¹⁹ in float, 2⁻⁴⁸ in double) of the largest value
// (measured: h 5.3·10⁻⁷ and 8.1·10⁻¹⁶; the weights are mostly the same bits). The gradients get
// 2⁻¹⁹ and 2⁻⁴⁰: the query and key-gain gradients add terms w_i·(dw_i − Σ_k w_k·dw_k) that
// cancel, at d = 1 all but exactly (every key is ±1), which magnifies a last-bit difference of
// the weights (measured in double: 2.4·10⁻¹³ at d = 1, 4·10⁻¹⁶ at d = 100).
BOOST_AUTO_TEST_CASE(one_pass_forward_matches_two_passes_to_rounding_in_float) {
  check_one_pass_against_two<float>(std::ldexp(1.0, -19), std::ldexp(1.0, -19));
}

BOOST_AUTO_TEST_CASE(one_pass_forward_matches_two_passes_to_rounding_in_double) {
  check_one_pass_against_two<double>(std::ldexp(1.0, -48), std::ldexp(1.0, -40));
}

BOOST_AUTO_TEST_CASE(rows_wider_than_the_one_pass_capacity_run_the_two_passes) {
  check_wide_rows_run_two_passes<float>();
  check_wide_rows_run_two_passes<double>();
}
