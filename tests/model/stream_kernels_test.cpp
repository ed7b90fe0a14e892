// The fused stream passes of HC (§7) and mHC (§8) against the unfused ones they replace in the
// designs (train.fused_kernels = off runs those), in float and double, on row counts that do not
// divide evenly among threads.
// - The combine + RMSNorm (stream_kernels.hpp CombineNorm, launched by combine_streams_rmsnorm)
//   against combine_streams then the CPU backend's RMSNorm forward, for the strides of both
//   designs, with and without a gain: bit for bit.
// - The mix backward in one pass per token (MixGrads, mix_streams_backward with one_pass) against
//   its two passes (value gradients, then coefficient gradients), for both designs' map layouts:
//   the same sums in the same order, but GCC contracts a·b + c into a fused multiply-add in one
//   loop and not in the other (stream_kernels.hpp MixGrads), so the last bit may differ: within
//   4 units of the last place of the largest value (2⁻²² relative in float, 2⁻⁵⁰ in double).
// - The mix with the next stream norm's rstd (MixRstd, mix_streams_rstd) against mix_streams then
//   normed_product's row_rstds over its output, for HC's norm rows (a stream) and mHC's (a
//   token): bit for bit.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE stream_kernels
#include "model/residual/stream_kernels.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "model/residual/normed_product.hpp"
#include "ops/cpu/rmsnorm.hpp"
#include "support/gradcheck.hpp"

using namespace db;

namespace {

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// One shape: the fused pass and the unfused pair write the same x, u and rstd bits.
template <class T>
void check_fused_equals_unfused(int64_t rows, int n, int d, int stride, bool with_gain) {
  const double eps = 1e-5;
  const std::vector<T> H = test::random_vector<T>(size_t(rows) * n * d, 7 + n);
  const std::vector<T> weights = test::random_vector<T>(size_t(rows) * n * stride, 8 + n, 0.7);
  std::vector<T> gain = test::random_vector<T>(d, 9, 0.2);
  for (T& g : gain) g += T(1);
  const T* g = with_gain ? gain.data() : nullptr;

  std::vector<T> x_ref(size_t(rows) * d), u_ref(x_ref.size()), rstd_ref(rows);
  combine_streams(MemorySpace::host, x_ref.data(), H.data(), weights.data(), stride, rows, n, d);
  cpu::rmsnorm_forward(u_ref.data(), rstd_ref.data(), x_ref.data(), g, rows, d, eps);

  std::vector<T> x(x_ref.size(), T(-1)), u(u_ref.size(), T(-1)), rstd(rows, T(-1));
  combine_streams_rmsnorm(MemorySpace::host, x.data(), u.data(), rstd.data(), H.data(),
                          weights.data(), stride, g, eps, rows, n, d);
  const std::string shape = "rows " + std::to_string(rows) + " n " + std::to_string(n) + " d " +
                            std::to_string(d) + " stride " + std::to_string(stride) +
                            (with_gain ? " gain" : " no gain");
  BOOST_TEST(same_bits(x, x_ref), "x: " << shape);
  BOOST_TEST(same_bits(u, u_ref), "u: " << shape);
  BOOST_TEST(same_bits(rstd, rstd_ref), "rstd: " << shape);
}

template <class T>
void check_all_shapes() {
  for (int n : {1, 3, 4})
    for (int stride : {1, n + 1})  // mHC's H_pre, HC's α[:, 0]
      for (bool with_gain : {true, false}) {
        check_fused_equals_unfused<T>(37, n, 24, stride, with_gain);
        check_fused_equals_unfused<T>(5, n, 130, stride, with_gain);
      }
}

// One shape of the mix backward: one pass and two passes write the same dy, dH, dpost and dmix
// up to the FMA contraction's rounding (4 units of the last place); dmix entries outside the map
// (HC's column 0 of α) are left as they were.
template <class T>
void check_one_pass_mix_backward(int64_t rows, int n, int d, StreamMapLayout map) {
  const size_t state = size_t(rows) * n * d;
  const std::vector<T> g = test::random_vector<T>(state, 21 + n),
                       H = test::random_vector<T>(state, 22);
  const std::vector<T> y = test::random_vector<T>(size_t(rows) * d, 23);
  const std::vector<T> post = test::random_vector<T>(size_t(rows) * n, 24);
  const std::vector<T> mix = test::random_vector<T>(size_t(rows) * map.row, 25);
  const std::vector<T> dmix_start = test::random_vector<T>(mix.size(), 26);
  struct Grads {
    std::vector<T> dy, dpost, dmix, dH;
  };
  auto run = [&](bool one_pass) {
    Grads r{std::vector<T>(size_t(rows) * d, T(-1)), std::vector<T>(size_t(rows) * n, T(-1)),
            dmix_start, std::vector<T>(state, T(-1))};
    mix_streams_backward(MemorySpace::host, one_pass, r.dy.data(), r.dpost.data(), r.dmix.data(),
                         r.dH.data(), g.data(), H.data(), y.data(), post.data(), mix.data(), map,
                         rows, n, d);
    return r;
  };
  const Grads two = run(false), one = run(true);
  const std::string shape = "rows " + std::to_string(rows) + " n " + std::to_string(n) + " d " +
                            std::to_string(d) + (map.offset ? " HC map" : " mHC map");
  const double ulps4 = 4 * std::numeric_limits<T>::epsilon();
  BOOST_TEST(test::max_relative_difference(one.dy.data(), two.dy) <= ulps4, "dy: " << shape);
  BOOST_TEST(test::max_relative_difference(one.dH.data(), two.dH) <= ulps4, "dH: " << shape);
  BOOST_TEST(test::max_relative_difference(one.dpost.data(), two.dpost) <= ulps4,
             "dpost: " << shape);
  BOOST_TEST(test::max_relative_difference(one.dmix.data(), two.dmix) <= ulps4, "dmix: " << shape);
  for (size_t i = 0; i < dmix_start.size(); ++i)  // the entries outside the map: untouched
    if (map.offset && i % (n + 1) == 0)
      BOOST_TEST((one.dmix[i] == dmix_start[i] && two.dmix[i] == dmix_start[i]), shape);
  BOOST_TEST(!same_bits(two.dmix, dmix_start), "dmix written: " << shape);
}

template <class T>
void check_mix_backward_shapes() {
  // n = 5 is past kMaxMixGradStreams: one_pass falls back to the two passes.
  for (int n : {1, 3, 4, 5})
    for (const StreamMapLayout map : {StreamMapLayout{int64_t(n) * (n + 1), 1, n + 1, 1},
                                      StreamMapLayout{int64_t(n) * n, n, 1, 0}}) {
      check_one_pass_mix_backward<T>(37, n, 24, map);
      check_one_pass_mix_backward<T>(5, n, 130, map);
    }
}

// One shape of the mix with the rstd: the same state bits as mix_streams, and the rstd bits of
// row_rstds over that state, for norm rows of `streams` output streams (HC: 1 with its map, mHC:
// n with its map).
template <class T>
void check_mix_rstd(int64_t rows, int n, int d, bool hc) {
  const double eps = 1e-5;
  const StreamMapLayout map = hc ? StreamMapLayout{int64_t(n) * (n + 1), 1, n + 1, 1}
                                 : StreamMapLayout{int64_t(n) * n, n, 1, 0};
  const int streams = hc ? 1 : n;
  const int64_t norm_rows = rows * n / streams;
  const size_t state = size_t(rows) * n * d;
  const std::vector<T> H = test::random_vector<T>(state, 41 + n, 2.0),
                       y = test::random_vector<T>(size_t(rows) * d, 42),
                       post = test::random_vector<T>(size_t(rows) * n, 43),
                       mix = test::random_vector<T>(size_t(rows) * map.row, 44);
  std::vector<T> out_ref(state), rstd_ref(norm_rows);
  mix_streams(MemorySpace::host, out_ref.data(), H.data(), y.data(), post.data(), mix.data(), map,
              rows, n, d);
  row_rstds(MemorySpace::host, rstd_ref.data(), out_ref.data(), norm_rows, streams * d, eps);

  std::vector<T> out(state, T(-1)), rstd(norm_rows, T(-1));
  mix_streams_rstd(MemorySpace::host, out.data(), rstd.data(), H.data(), y.data(), post.data(),
                   mix.data(), map, rows, n, d, streams, eps);
  const std::string shape = "rows " + std::to_string(rows) + " n " + std::to_string(n) + " d " +
                            std::to_string(d) + (hc ? " HC" : " mHC");
  BOOST_TEST(same_bits(out, out_ref), "state: " << shape);
  BOOST_TEST(same_bits(rstd, rstd_ref), "rstd: " << shape);
}

template <class T>
void check_mix_rstd_shapes() {
  for (int n : {1, 3, 4})
    for (bool hc : {true, false}) {
      check_mix_rstd<T>(37, n, 24, hc);
      check_mix_rstd<T>(5, n, 130, hc);
    }
}

}  // namespace

BOOST_AUTO_TEST_CASE(mix_with_rstd_equals_the_mix_then_the_rstd_pass_bitwise_in_float) {
  check_mix_rstd_shapes<float>();
}

BOOST_AUTO_TEST_CASE(mix_with_rstd_equals_the_mix_then_the_rstd_pass_bitwise_in_double) {
  check_mix_rstd_shapes<double>();
}

// The rstd is that of the norm rows (a reference that summed the wrong rows would fail here as
// well as the kernel): HC's per stream, mHC's over a token's n streams, from the state in double.
BOOST_AUTO_TEST_CASE(mix_with_rstd_normalises_hc_streams_and_mhc_tokens) {
  const int64_t rows = 3;
  const int n = 4, d = 16;
  const double eps = 1e-5;
  const std::vector<double> H = test::random_vector<double>(size_t(rows) * n * d, 51, 3.0),
                            y = test::random_vector<double>(size_t(rows) * d, 52),
                            post = test::random_vector<double>(size_t(rows) * n, 53),
                            mix = test::random_vector<double>(size_t(rows) * n * n, 54);
  const StreamMapLayout map{int64_t(n) * n, n, 1, 0};
  for (int streams : {1, n}) {
    std::vector<double> out(H.size()), rstd(rows * n / streams);
    mix_streams_rstd(MemorySpace::host, out.data(), rstd.data(), H.data(), y.data(), post.data(),
                     mix.data(), map, rows, n, d, streams, eps);
    for (size_t q = 0; q < rstd.size(); ++q) {
      double sum_sq = 0;
      for (int e = 0; e < streams * d; ++e)
        sum_sq += out[q * streams * d + e] * out[q * streams * d + e];
      BOOST_TEST(rstd[q] == 1 / std::sqrt(sum_sq / (streams * d) + eps),
                 boost::test_tools::tolerance(1e-12));
    }
  }
}

BOOST_AUTO_TEST_CASE(one_pass_mix_backward_equals_the_two_passes_to_rounding_in_float) {
  check_mix_backward_shapes<float>();
}

BOOST_AUTO_TEST_CASE(one_pass_mix_backward_equals_the_two_passes_to_rounding_in_double) {
  check_mix_backward_shapes<double>();
}

// The one-pass coefficient gradients are the dot products they stand for (a pass that summed
// the wrong stream would still match itself): dpost_i = ⟨g_i, y⟩, dmix = ⟨g_i, H_j⟩ in double.
BOOST_AUTO_TEST_CASE(one_pass_mix_backward_coefficients_are_the_dot_products) {
  const int64_t rows = 3;
  const int n = 4, d = 16;
  const StreamMapLayout map{int64_t(n) * n, n, 1, 0};
  const std::vector<double> g = test::random_vector<double>(size_t(rows) * n * d, 31),
                            H = test::random_vector<double>(g.size(), 32),
                            y = test::random_vector<double>(size_t(rows) * d, 33),
                            post = test::random_vector<double>(size_t(rows) * n, 34),
                            mix = test::random_vector<double>(size_t(rows) * n * n, 35);
  std::vector<double> dy(y.size()), dH(g.size()), dpost(post.size()), dmix(mix.size());
  mix_streams_backward(MemorySpace::host, true, dy.data(), dpost.data(), dmix.data(), dH.data(),
                       g.data(), H.data(), y.data(), post.data(), mix.data(), map, rows, n, d);
  for (int64_t r = 0; r < rows; ++r)
    for (int i = 0; i < n; ++i) {
      double post_dot = 0;
      for (int e = 0; e < d; ++e) post_dot += g[(r * n + i) * d + e] * y[r * d + e];
      BOOST_TEST(dpost[r * n + i] == post_dot, boost::test_tools::tolerance(1e-12));
      for (int j = 0; j < n; ++j) {
        double dot = 0;
        for (int e = 0; e < d; ++e) dot += g[(r * n + i) * d + e] * H[(r * n + j) * d + e];
        BOOST_TEST(dmix[map.at(r, i, j)] == dot, boost::test_tools::tolerance(1e-12));
      }
    }
}

BOOST_AUTO_TEST_CASE(fused_combine_and_rmsnorm_equal_the_unfused_pair_bitwise_in_float) {
  check_all_shapes<float>();
}

BOOST_AUTO_TEST_CASE(fused_combine_and_rmsnorm_equal_the_unfused_pair_bitwise_in_double) {
  check_all_shapes<double>();
}

// The norm really normalises (a fused pass that wrote x into u would pass the bit checks only if
// the reference were wrong too): mean(u²) = mean(x²)/(mean(x²) + eps) without a gain.
BOOST_AUTO_TEST_CASE(fused_combine_and_rmsnorm_output_has_unit_mean_square) {
  const int64_t rows = 4;
  const int n = 4, d = 64;
  const std::vector<double> H = test::random_vector<double>(size_t(rows) * n * d, 3, 5.0);
  const std::vector<double> weights = test::random_vector<double>(size_t(rows) * n, 4);
  std::vector<double> x(size_t(rows) * d), u(x.size()), rstd(rows);
  combine_streams_rmsnorm(MemorySpace::host, x.data(), u.data(), rstd.data(), H.data(),
                          weights.data(), 1, static_cast<const double*>(nullptr), 0.0, rows, n, d);
  for (int64_t r = 0; r < rows; ++r) {
    double x0 = 0, mean_sq = 0;
    for (int s = 0; s < n; ++s) x0 += weights[r * n + s] * H[(r * n + s) * d];
    for (int e = 0; e < d; ++e) mean_sq += u[r * d + e] * u[r * d + e] / d;
    BOOST_TEST(x[r * d] == x0, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(mean_sq == 1.0, boost::test_tools::tolerance(1e-12));
  }
}
