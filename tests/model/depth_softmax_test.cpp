// The AttnRes depth softmax in one read of its sources (depth_softmax.hpp OnePassForward and
// OnePassBackward, train.fused_kernels) against the two passes they replace (Forward,
// Backward), in float and double, for 1, 2, 17 and 65 sources (the three source capacities) and
// widths below, at and above a lane's columns, none a multiple of 32 but the capacity itself:
// - rstd and the logits are the same sums in the same order (the same bits where the compiler
//   contracts a·b + c alike in both loops); h and the weights differ by rounding only (the
//   online softmax sums unnormalised, rescaled terms);
// - the two-pass backward gives the same gradients to rounding whichever forward fed it, and so
//   does the one-pass backward (tolerances below);
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

// The forward, then the backward it feeds, each in one pass or two.
template <class T>
Outputs<T> run(const Inputs<T>& in, bool one_pass_forward, bool one_pass_backward) {
  const DepthMixShape& s = in.shape;
  Outputs<T> out{std::vector<T>(kRows * s.d),
                 std::vector<T>(kRows * s.sources),
                 std::vector<T>(kRows * s.sources),
                 std::vector<T>(s.d),
                 std::vector<T>(s.d),
                 {}};
  depth_softmax_forward(MemorySpace::host, one_pass_forward, out.h.data(), out.weights.data(),
                        out.rstd.data(), in.pointers(), in.query.data(), in.key_gain.data(), s);
  std::vector<T*> dsources;
  for (int i = 0; i < s.sources; ++i) out.dsources.emplace_back(kRows * s.d, T(0));
  for (std::vector<T>& ds : out.dsources) dsources.push_back(ds.data());
  depth_softmax_backward(MemorySpace::host, one_pass_backward, dsources, out.dquery.data(),
                         out.dkey_gain.data(), in.dh.data(), out.h.data(), in.pointers(),
                         out.weights.data(), out.rstd.data(), in.query.data(), in.key_gain.data(),
                         s);
  return out;
}

template <class T>
double difference(const std::vector<T>& a, const std::vector<T>& b) {
  return test::max_relative_difference(a.data(), b);
}

// The largest difference of any gradient over the largest gradient: one scale for the mix's
// gradients, since with one source the query and key-gain gradients are zero (its weight is 1
// whatever the logit), which rounding leaves at ±10⁻¹⁷ or exactly 0.
template <class T>
double gradient_difference(const Outputs<T>& a, const Outputs<T>& b) {
  std::vector<T> all_a = a.dquery, all_b = b.dquery;
  all_a.insert(all_a.end(), a.dkey_gain.begin(), a.dkey_gain.end());
  all_b.insert(all_b.end(), b.dkey_gain.begin(), b.dkey_gain.end());
  for (size_t i = 0; i < a.dsources.size(); ++i) {
    all_a.insert(all_a.end(), a.dsources[i].begin(), a.dsources[i].end());
    all_b.insert(all_b.end(), b.dsources[i].begin(), b.dsources[i].end());
  }
  return difference(all_a, all_b);
}

template <class T>
void check_one_pass_against_two(double tolerance, double gradient_tolerance) {
  double worst_h = 0, worst_weights = 0, worst_rstd = 0, worst_backward = 0, worst_both = 0;
  for (int m : {1, 2, 17, 65})
    for (int d : {3, 33, 100, 1024, 1025, 1999}) {
      if (d > kMaxOnePassWidth<T>) continue;
      BOOST_TEST_CONTEXT("m = " << m << ", d = " << d) {
        const Inputs<T> in = make_inputs<T>(m, d);
        const Outputs<T> two = run(in, false, false);
        const Outputs<T> one_forward = run(in, true, false), one = run(in, true, true);
        const double h = difference(one.h, two.h), weights = difference(one.weights, two.weights),
                     rstd = difference(one.rstd, two.rstd);
        // The two-pass backward fed by either forward, and both in one pass.
        const double backward = gradient_difference(one_forward, two),
                     both = gradient_difference(one, two);
        BOOST_TEST(h <= tolerance);
        BOOST_TEST(weights <= tolerance);
        BOOST_TEST(rstd <= tolerance);
        BOOST_TEST(backward <= gradient_tolerance);
        BOOST_TEST(both <= gradient_tolerance);
        worst_h = std::max(worst_h, h);
        worst_weights = std::max(worst_weights, weights);
        worst_rstd = std::max(worst_rstd, rstd);
        worst_backward = std::max(worst_backward, backward);
        worst_both = std::max(worst_both, both);
      }
    }
  BOOST_TEST_MESSAGE(sizeof(T) * 8 << "-bit, one pass against two, largest relative difference: h "
                                   << worst_h << ", weights " << worst_weights << ", rstd "
                                   << worst_rstd << "; gradients, two-pass backward "
                                   << worst_backward << ", one-pass backward " << worst_both);
}

template <class T>
void check_wide_rows_run_two_passes() {
  const Inputs<T> in = make_inputs<T>(17, kMaxOnePassWidth<T> + 1);
  const Outputs<T> one = run(in, true, true), two = run(in, false, false);
  BOOST_TEST(one.h == two.h);
  BOOST_TEST(one.weights == two.weights);
  BOOST_TEST(one.rstd == two.rstd);
  BOOST_TEST(one.dsources == two.dsources);
  BOOST_TEST(one.dquery == two.dquery);
  BOOST_TEST(one.dkey_gain == two.dkey_gain);
}

}  // namespace

// Tolerances, relative to the largest value: the forward 2⁻¹⁹ in float, 2⁻⁴⁶ in double (16 and
// 64 units of the last place; measured: h 5.3·10⁻⁷ and 9·10⁻¹⁶, the weights 0 and 10⁻¹⁵).
// The gradients 2⁻¹⁶ and 2⁻⁴⁰: the one-pass backward takes Σ_k w_k·dw_k as dh·h, h rounded to T,
// and the query and key-gain gradients add terms w_i·(dw_i − Σ_k w_k·dw_k) that partly cancel,
// which magnifies that rounding (measured: 2.6·10⁻⁶ in float, 8·10⁻¹⁵ in double; up to
// 3.6·10⁻¹⁴ with other loop forms, as the compiler's contractions into fused multiply-adds
// change).
BOOST_AUTO_TEST_CASE(one_pass_forward_and_backward_match_two_passes_to_rounding_in_float) {
  check_one_pass_against_two<float>(std::ldexp(1.0, -19), std::ldexp(1.0, -16));
}

BOOST_AUTO_TEST_CASE(one_pass_forward_and_backward_match_two_passes_to_rounding_in_double) {
  check_one_pass_against_two<double>(std::ldexp(1.0, -46), std::ldexp(1.0, -40));
}

BOOST_AUTO_TEST_CASE(rows_wider_than_the_one_pass_capacity_run_the_two_passes) {
  check_wide_rows_run_two_passes<float>();
  check_wide_rows_run_two_passes<double>();
}
