// The fused residual add + norm (ops.hpp add_rmsnorm_forward, add_layernorm_forward) on the
// CPU: the bits of the two steps it replaces — axpby, then the norm's forward on the sum — for
// the in-place add of the pre-norm stream (alpha = 1, sum = branch) and the up-weighted skip of
// DeepNorm and KEEL (alpha ≠ 1, sum a buffer of its own, the axpby on a copy of x), with and
// without a gain, in float and double.
#define BOOST_TEST_MODULE add_rmsnorm
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/rng.hpp"
#include "ops/cpu/cpu_ops.hpp"
#include "support/gradcheck.hpp"

using namespace db;

namespace {

using Types = boost::mpl::list<float, double>;

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// Rows of a wide and an odd width; the branch on another scale than x, as a sublayer's output.
struct Shape {
  int64_t rows;
  int width;
};
const Shape kShapes[] = {{16, 1024}, {7, 37}};
constexpr double kEps = 1e-6;

// What the fused op replaces: the add as the designs wrote it, then the norm of the sum.
template <class T>
void add_then_norm(Ops<T>& ops, std::vector<T>& sum, std::vector<T>& y, std::vector<T>& mean,
                   std::vector<T>& rstd, const std::vector<T>& x, const std::vector<T>& branch,
                   T alpha, const T* gain, Shape s, bool layernorm) {
  const int64_t count = s.rows * s.width;
  if (alpha == T(1)) {  // in place: branch += x
    sum = branch;
    ops.axpby(sum.data(), T(1), x.data(), T(1), count);
  } else {  // sum = x, then sum = alpha·sum + branch
    sum = x;
    ops.axpby(sum.data(), T(1), branch.data(), alpha, count);
  }
  if (layernorm)
    ops.layernorm_forward(y.data(), mean.data(), rstd.data(), sum.data(), gain, s.rows, s.width,
                          kEps);
  else
    ops.rmsnorm_forward(y.data(), rstd.data(), sum.data(), gain, s.rows, s.width, kEps);
}

template <class T>
void check_fused_matches_two_steps(bool layernorm) {
  auto ops = make_cpu_ops<T>();
  for (const Shape s : kShapes) {
    const int64_t count = s.rows * s.width;
    const std::vector<T> x = test::random_vector<T>(count, 1),
                         branch = test::random_vector<T>(count, 2, 0.3);
    const std::vector<T> gain = test::random_vector<T>(s.width, 3);
    for (const T alpha : {T(1), T(2.3784142300054421), T(48)}) {
      for (const T* g : {gain.data(), static_cast<const T*>(nullptr)}) {
        std::vector<T> sum, y(count), mean(s.rows), rstd(s.rows);
        add_then_norm(*ops, sum, y, mean, rstd, x, branch, alpha, g, s, layernorm);

        // alpha = 1: in place, the sum into the branch's buffer; else a buffer of its own.
        std::vector<T> fused_branch = branch, fused_own(count, T(-7));
        T* fused_sum = alpha == T(1) ? fused_branch.data() : fused_own.data();
        std::vector<T> fused_y(count), fused_mean(s.rows), fused_rstd(s.rows);
        if (layernorm)
          ops->add_layernorm_forward(fused_sum, fused_y.data(), fused_mean.data(),
                                     fused_rstd.data(), x.data(), fused_branch.data(), alpha, g,
                                     s.rows, s.width, kEps);
        else
          ops->add_rmsnorm_forward(fused_sum, fused_y.data(), fused_rstd.data(), x.data(),
                                   fused_branch.data(), alpha, g, s.rows, s.width, kEps);

        BOOST_TEST_CONTEXT("width " << s.width << ", alpha " << alpha << ", gain " << bool(g)) {
          BOOST_TEST(same_bits(alpha == T(1) ? fused_branch : fused_own, sum));
          BOOST_TEST(same_bits(fused_y, y));
          BOOST_TEST(same_bits(fused_rstd, rstd));
          if (layernorm) BOOST_TEST(same_bits(fused_mean, mean));
          if (alpha != T(1)) BOOST_TEST(same_bits(fused_branch, branch));  // not written
        }
      }
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(add_rmsnorm_gives_the_bits_of_axpby_then_rmsnorm, T, Types) {
  check_fused_matches_two_steps<T>(/*layernorm=*/false);
}

BOOST_AUTO_TEST_CASE_TEMPLATE(add_layernorm_gives_the_bits_of_axpby_then_layernorm, T, Types) {
  check_fused_matches_two_steps<T>(/*layernorm=*/true);
}

// The values, not only the agreement with the two steps: sum = alpha·x + branch and y the norm
// of it, in double against a direct evaluation.
BOOST_AUTO_TEST_CASE(add_rmsnorm_computes_the_norm_of_alpha_x_plus_branch) {
  auto ops = make_cpu_ops<double>();
  const int64_t rows = 3;
  const int width = 5;
  const std::vector<double> x = test::random_vector<double>(rows * width, 4);
  const std::vector<double> branch = test::random_vector<double>(rows * width, 5);
  const std::vector<double> gain = test::random_vector<double>(width, 6);
  const double alpha = 1.5;
  std::vector<double> sum(rows * width), y(rows * width), rstd(rows);
  ops->add_rmsnorm_forward(sum.data(), y.data(), rstd.data(), x.data(), branch.data(), alpha,
                           gain.data(), rows, width, kEps);
  for (int64_t r = 0; r < rows; ++r) {
    double sq = 0;
    for (int j = 0; j < width; ++j) {
      const double s = alpha * x[r * width + j] + branch[r * width + j];
      BOOST_TEST(sum[r * width + j] == s, boost::test_tools::tolerance(1e-15));
      sq += s * s;
    }
    const double inv = 1 / std::sqrt(sq / width + kEps);
    BOOST_TEST(rstd[r] == inv, boost::test_tools::tolerance(1e-14));
    for (int j = 0; j < width; ++j)
      BOOST_TEST(y[r * width + j] == gain[j] * sum[r * width + j] * inv,
                 boost::test_tools::tolerance(1e-14));
  }
}
