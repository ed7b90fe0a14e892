// The fused stream combine + RMSNorm of HC (§7) and mHC (§8) (stream_kernels.hpp CombineNorm,
// launched by combine_streams_rmsnorm) against the unfused pair it replaced in the designs,
// combine_streams then the CPU backend's RMSNorm forward: bit for bit, in float and double, for
// the strides of both designs, with and without a gain, on row counts that do not divide evenly
// among threads.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE stream_kernels
#include "model/residual/stream_kernels.hpp"

#include <boost/test/unit_test.hpp>
#include <cstring>
#include <string>
#include <vector>

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

}  // namespace

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
