// HC's and mHC's coefficient product z = RMSNorm(x; gain)·[A | B] computed from x itself
// (model/residual/normed_product.hpp) against the way the designs computed it before: the
// backend's RMSNorm writing the normalised rows, a product reading them, and in the backward the
// gradient of the normalised rows formed by a product and handed to the RMSNorm's backward. The
// rounding order differs, so in double the two agree to ~1e-12 relative, in float to ~1e-5; the
// weight, gain and input gradients are checked as well as z, with W in two blocks (HC: W_α, W_β)
// and in one (mHC: φ). And the combine's input gradient added in the input gradient's pass
// (CombineInputTerm) against the combine's own pass before it (stream_kernels.hpp
// combine_streams_backward), for HC's rows (one per stream) and mHC's (one per token).
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE normed_product
#include "model/residual/normed_product.hpp"

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "model/residual/stream_kernels.hpp"
#include "ops/cpu/cpu_ops.hpp"
#include "ops/cpu/rmsnorm.hpp"
#include "support/gradcheck.hpp"

using namespace db;

namespace {

template <class T>
std::vector<T> random_values(size_t count, uint64_t seed, double scale = 1.0) {
  const std::vector<double> v = test::random_vector(count, seed, scale);
  return {v.begin(), v.end()};
}

// rows × width input, W = [A (ca columns) | B (cb columns)].
template <class T>
void check_against_the_unfused_norm(int64_t rows, int width, int ca, int cb, double tolerance) {
  const int m = ca + cb;
  const double eps = 1e-5;
  const std::vector<T> x = random_values<T>(size_t(rows) * width, 11 + width, 2.0);
  std::vector<T> gain = random_values<T>(width, 12, 0.3);
  for (T& g : gain) g += T(1);
  const std::vector<T> a = random_values<T>(size_t(width) * ca, 13),
                       b = random_values<T>(size_t(width) * cb, 14);
  const std::vector<T> dz = random_values<T>(size_t(rows) * m, 15);
  std::vector<T> W(size_t(width) * m);  // [A | B] in one matrix, for the reference product
  for (int e = 0; e < width; ++e)
    for (int c = 0; c < m; ++c) W[e * m + c] = c < ca ? a[e * ca + c] : b[e * cb + c - ca];

  // The reference: normalised rows, their product, their gradient, RMSNorm's backward.
  std::unique_ptr<Ops<T>> ops = make_cpu_ops<T>();
  std::vector<T> xn(x.size()), rstd_ref(rows), z_ref(size_t(rows) * m);
  cpu::rmsnorm_forward(xn.data(), rstd_ref.data(), x.data(), gain.data(), rows, width, eps);
  ops->gemm(false, false, int(rows), m, width, T(1), xn.data(), width, W.data(), m, T(0),
            z_ref.data(), m);
  std::vector<T> dW_ref(W.size(), T(0.5)), dxn(x.size()), dx_ref(x.size(), T(0.25));
  std::vector<T> dgain_ref(width, T(0.5));
  ops->gemm(true, false, width, m, int(rows), T(1), xn.data(), width, dz.data(), m, T(1),
            dW_ref.data(), m);
  ops->gemm(false, true, int(rows), width, m, T(1), dz.data(), m, W.data(), m, T(0), dxn.data(),
            width);
  cpu::rmsnorm_backward(dx_ref.data(), dgain_ref.data(), dxn.data(), x.data(), gain.data(),
                        rstd_ref.data(), rows, width, /*accumulate_dx=*/true);

  // The product through x itself; the gradients accumulate onto the same starting values.
  std::vector<T> z(z_ref.size()), rstd(rows), da(a.size(), T(0.5)), db(b.size(), T(0.5));
  std::vector<T> dgain(width, T(0.5)), dx(x.size(), T(0.25));
  Buffer<T> gw, dzs, G, dn;
  const NormedWeights<T> w{gain.data(),  a.data(),  cb ? b.data() : nullptr, ca, cb,
                           dgain.data(), da.data(), cb ? db.data() : nullptr};
  row_rstds(MemorySpace::host, rstd.data(), x.data(), rows, width, eps);
  normed_product_forward(*ops, z.data(), rstd.data(), gw, x.data(), rows, width, w);
  normed_product_backward(*ops, dx.data(), dz.data(), x.data(), rstd.data(), rows, width, w, gw,
                          dzs, G, dn);

  std::vector<T> dA_ref(a.size()), dB_ref(b.size());
  for (int e = 0; e < width; ++e)
    for (int c = 0; c < m; ++c)
      (c < ca ? dA_ref[e * ca + c] : dB_ref[e * cb + c - ca]) = dW_ref[e * m + c];
  const std::string shape = "rows " + std::to_string(rows) + " width " + std::to_string(width) +
                            " columns " + std::to_string(ca) + "+" + std::to_string(cb);
  BOOST_TEST(test::max_relative_difference(rstd.data(), rstd_ref) == 0.0,
             "rstd (same sums): " << shape);
  BOOST_TEST(test::max_relative_difference(z.data(), z_ref) < tolerance, "z: " << shape);
  BOOST_TEST(test::max_relative_difference(da.data(), dA_ref) < tolerance, "dA: " << shape);
  if (cb) BOOST_TEST(test::max_relative_difference(db.data(), dB_ref) < tolerance, "dB: " << shape);
  BOOST_TEST(test::max_relative_difference(dgain.data(), dgain_ref) < tolerance,
             "dgain: " << shape);
  BOOST_TEST(test::max_relative_difference(dx.data(), dx_ref) < tolerance, "dx: " << shape);
}

}  // namespace

BOOST_AUTO_TEST_CASE(normed_product_matches_the_unfused_norm_and_product_in_double) {
  check_against_the_unfused_norm<double>(37, 24, 5, 1, 1e-12);  // HC, n = 4: [W_α | W_β]
  check_against_the_unfused_norm<double>(5, 130, 2, 1, 1e-12);  // HC, n = 1
  check_against_the_unfused_norm<double>(9, 96, 15, 0, 1e-12);  // mHC, n = 3: φ alone
  check_against_the_unfused_norm<double>(9, 96, 8, 0, 1e-12);   // dn per row at m = 8
  // Folded weights beyond dn_from_rows: dn from a product (the mHC case above is, too).
  check_against_the_unfused_norm<double>(7, 1536, 15, 0, 1e-12);
}

BOOST_AUTO_TEST_CASE(normed_product_matches_the_unfused_norm_and_product_in_float) {
  check_against_the_unfused_norm<float>(37, 24, 5, 1, 2e-5);
  check_against_the_unfused_norm<float>(9, 96, 15, 0, 2e-5);
  check_against_the_unfused_norm<float>(7, 1536, 15, 0, 2e-5);
}

namespace {

// The combine x_in = Σ_s w_ts·x[t, s] over `tokens` tokens of n streams of d values; the norm's
// rows are `width` wide (HC: d, mHC: n·d). Its input gradient added in the norm's input-gradient
// pass gives ∂x as the combine's own pass followed by the norm's backward: the same additions in
// the same order per value, up to the FMA contraction the compiler picks for w·∂x_in + ∂x in
// each loop (stream_kernels.hpp MixGrads says more): within 4 units of the last place.
template <class T>
void check_combine_term(int64_t tokens, int n, int d, int stride, bool per_token, int m) {
  const int width = per_token ? n * d : d;
  const int64_t rows = tokens * n * d / width;
  const double eps = 1e-5;
  const std::vector<T> x = random_values<T>(size_t(tokens) * n * d, 41 + n, 2.0);
  std::vector<T> gain = random_values<T>(width, 42, 0.3);
  for (T& g : gain) g += T(1);
  const std::vector<T> a = random_values<T>(size_t(width) * m, 43);
  const std::vector<T> dz = random_values<T>(size_t(rows) * m, 44);
  const std::vector<T> weights = random_values<T>(size_t(tokens) * n * stride, 45);
  const std::vector<T> dx_in = random_values<T>(size_t(tokens) * d, 46);
  const std::vector<T> dx_start = random_values<T>(x.size(), 47);
  std::unique_ptr<Ops<T>> ops = make_cpu_ops<T>();

  auto run = [&](bool fused, std::vector<T>& dx) {
    std::vector<T> z(size_t(rows) * m), rstd(rows), da(a.size(), T(0)), dgain(width, T(0));
    std::vector<T> dweights(weights.size(), T(0));
    Buffer<T> gw, dzs, G, dn;
    const NormedWeights<T> w{gain.data(), a.data(),     nullptr,   m,
                             0,           dgain.data(), da.data(), nullptr};
    row_rstds(MemorySpace::host, rstd.data(), x.data(), rows, width, eps);
    normed_product_forward(*ops, z.data(), rstd.data(), gw, x.data(), rows, width, w);
    dx = dx_start;
    combine_streams_backward(MemorySpace::host, dweights.data(), dx.data(), dx_in.data(), x.data(),
                             weights.data(), stride, tokens, n, d,
                             /*input_grads=*/!fused);
    normed_product_kernels::CombineInputTerm<T> term;
    if (fused) term = {dx_in.data(), weights.data(), stride, n, d};
    normed_product_backward(*ops, dx.data(), dz.data(), x.data(), rstd.data(), rows, width, w, gw,
                            dzs, G, dn, term);
  };
  std::vector<T> separate, fused;
  run(false, separate);
  run(true, fused);
  const std::string shape = std::string(per_token ? "mHC rows" : "HC rows") + " tokens " +
                            std::to_string(tokens) + " n " + std::to_string(n) + " d " +
                            std::to_string(d) + " m " + std::to_string(m);
  BOOST_TEST(test::max_relative_difference(fused.data(), separate) <=
                 4 * std::numeric_limits<T>::epsilon(),
             "dx: " << shape);
  // The term is really there: without it ∂x differs by much more than rounding.
  std::vector<T> without;
  {
    std::vector<T> z(size_t(rows) * m), rstd(rows), da(a.size(), T(0)), dgain(width, T(0));
    Buffer<T> gw, dzs, G, dn;
    const NormedWeights<T> w{gain.data(), a.data(),     nullptr,   m,
                             0,           dgain.data(), da.data(), nullptr};
    row_rstds(MemorySpace::host, rstd.data(), x.data(), rows, width, eps);
    normed_product_forward(*ops, z.data(), rstd.data(), gw, x.data(), rows, width, w);
    without = dx_start;
    normed_product_backward(*ops, without.data(), dz.data(), x.data(), rstd.data(), rows, width, w,
                            gw, dzs, G, dn);
  }
  BOOST_TEST(test::max_relative_difference(without.data(), separate) > 1e-3,
             "term missing: " << shape);
}

template <class T>
void check_combine_term_shapes() {
  for (int n : {1, 3, 4}) {
    check_combine_term<T>(37, n, 24, n + 1, /*per_token=*/false, n + 2);  // HC: α[:, 0], n + 2
    check_combine_term<T>(5, n, 130, n + 1, false, n + 2);
    check_combine_term<T>(9, n, 32, 1, /*per_token=*/true, n * n + 2 * n);  // mHC: H_pre, φ
    check_combine_term<T>(3, n, 400, 1, true, n * n + 2 * n);               // dn from a product
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(combine_input_grad_in_the_norm_backward_pass_equals_its_own_pass_in_double) {
  check_combine_term_shapes<double>();
}

BOOST_AUTO_TEST_CASE(combine_input_grad_in_the_norm_backward_pass_equals_its_own_pass_in_float) {
  check_combine_term_shapes<float>();
}
