// The HC/mHC lane functors (stream_kernels.hpp, normed_product.hpp) on an emulated 32-lane warp
// (support/emulated_warp.hpp: the GPU's lane striding and warp-sum butterfly) against their run
// on the host's one lane, in float and double, for n = 1, 3, 4 streams and row widths below, at
// and above the warp's 32 lanes, multiples of 32 or not, up to d = 1024; with HC's coefficient
// layout and mHC's:
// - every result agrees to rounding (the same terms, summed per lane then by the butterfly:
//   support/lane_agreement.hpp reorder_tolerance for the row's length), and a second run on the
//   warp gives the same bits;
// - MixRstd's rstd is RowRstd's over the stored output bit for bit on the warp where
//   stream_kernels.hpp says so (d a multiple of 32, or a norm row of one stream: HC), and to
//   rounding otherwise (mHC's rows where the lanes' shares differ at the streams' borders);
// - MixGrads gives the two passes' dpost and dmix on the warp bit for bit.
// Built without contraction of a·b + c into fused multiply-adds (tests.cmake), which GCC decides
// per loop and so per instantiation: values that no sum across lanes enters (the combined x, the
// mix's output, dy, dH) are then the host's bits on the warp, and MixGrads the two passes' (as
// stream_kernels.hpp says).
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE stream_lanes_warp
#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "model/residual/normed_product.hpp"
#include "model/residual/stream_kernels.hpp"
#include "support/gradcheck.hpp"
#include "support/lane_agreement.hpp"

// Built with DB_EMULATE_DEVICE_LOOPS (tests.cmake): the register-array loops in the GPU's form.
static_assert(DB_DEVICE_LOOPS, "the warp tests run the GPU's loop form");

using namespace db;
using namespace db::test;

namespace {

constexpr int64_t kTokens = 2;
constexpr double kEps = 1e-5;

struct Shape {
  int n, d;
  bool hc;  // HC's layouts (α [rows, n, n+1], a norm row per stream), else mHC's
  int combine_stride() const { return hc ? n + 1 : 1; }
  StreamMapLayout map() const {
    return hc ? StreamMapLayout{n * (n + 1), 1, n + 1, 1} : StreamMapLayout{n * n, n, 1, 0};
  }
  int norm_streams() const { return hc ? 1 : n; }
  std::string name() const {
    return std::string(hc ? "HC" : "mHC") + " n " + std::to_string(n) + " d " + std::to_string(d);
  }
};

// The combine + pre-norm (CombineNorm) and the combine's weight gradient (CombineWeightGrad).
template <class T, class Rows>
Results<T> combine_results(const Shape& s, bool with_gain, const Rows& launch) {
  const int n = s.n, d = s.d, stride = s.combine_stride();
  const std::vector<T> H = random_vector<T>(kTokens * n * d, 1),
                       weights = random_vector<T>(kTokens * n * stride, 2, 0.7),
                       gain = random_vector<T>(d, 3), dx = random_vector<T>(kTokens * d, 4);
  std::vector<T> x(kTokens * d), u(kTokens * d), rstd(kTokens),
      dweights = random_vector<T>(kTokens * n * stride, 5);
  launch.lanes(kTokens, stream_kernels::CombineNorm<T>{
                            x.data(), u.data(), rstd.data(), H.data(), weights.data(),
                            with_gain ? gain.data() : nullptr, stride, n, d, kEps});
  launch.lanes(kTokens * n, stream_kernels::CombineWeightGrad<T>{dweights.data(), dx.data(),
                                                                 H.data(), stride, n, d});
  return {{"CombineNorm x", x, true},
          {"CombineNorm u", u},
          {"CombineNorm rstd", rstd},
          {"CombineWeightGrad", dweights}};
}

template <class T>
struct MixInputs {
  std::vector<T> H, y, post, mix, g;
  explicit MixInputs(const Shape& s)
      : H(random_vector<T>(kTokens * s.n * s.d, 11)),
        y(random_vector<T>(kTokens * s.d, 12)),
        post(random_vector<T>(kTokens * s.n, 13)),
        mix(random_vector<T>(kTokens * s.map().row, 14, 0.5)),
        g(random_vector<T>(kTokens * s.n * s.d, 15)) {}
  stream_kernels::Mix<T> mix_into(const Shape& s, T* out) const {
    return {out, H.data(), y.data(), post.data(), mix.data(), s.map(), s.n, s.d};
  }
};

// The mix with the next norm's rstd (MixRstd), and RowRstd over its output.
template <class T, class Rows>
Results<T> mix_rstd_results(const Shape& s, const Rows& launch) {
  const MixInputs<T> in(s);
  const int streams = s.norm_streams();
  const int64_t norm_rows = kTokens * s.n / streams;
  std::vector<T> out(kTokens * s.n * s.d), rstd(norm_rows), row_rstd(norm_rows);
  launch.lanes(norm_rows,
               stream_kernels::MixRstd<T>{in.mix_into(s, out.data()), rstd.data(), streams, kEps});
  launch.lanes(norm_rows, normed_product_kernels::RowRstd<T>{row_rstd.data(), out.data(),
                                                             streams * s.d, kEps});
  return {{"MixRstd out", out, true}, {"MixRstd rstd", rstd}, {"RowRstd", row_rstd}};
}

// The mix's coefficient gradients in one pass (MixGrads, which writes dy and dH too) or in the
// second of the two passes (MixCoefficientGrads, dy and dH left at their initial values).
template <class T, class Rows>
Results<T> mix_grad_results(const Shape& s, bool one_pass, const Rows& launch) {
  const MixInputs<T> in(s);
  std::vector<T> dy = random_vector<T>(kTokens * s.d, 21),
                 dH = random_vector<T>(kTokens * s.n * s.d, 22),
                 dpost = random_vector<T>(kTokens * s.n, 23),
                 dmix = random_vector<T>(kTokens * s.map().row, 24);
  if (one_pass)
    launch.lanes(kTokens,
                 stream_kernels::MixGrads<T>{dy.data(), dH.data(), dpost.data(), dmix.data(),
                                             in.g.data(), in.H.data(), in.y.data(), in.post.data(),
                                             in.mix.data(), s.map(), s.n, s.d});
  else
    launch.lanes(kTokens * s.n, stream_kernels::MixCoefficientGrads<T>{
                                    dpost.data(), dmix.data(), in.g.data(), in.H.data(),
                                    in.y.data(), s.map(), s.n, s.d});
  const std::string name = one_pass ? "MixGrads " : "MixCoefficientGrads ";
  return {{name + "dpost", dpost},
          {name + "dmix", dmix},
          {name + "dy", dy, true},
          {name + "dH", dH, true}};
}

// The stream norm's input gradient (InputGrad) as HC runs it (a row per stream, m = n + 2
// coefficients, dn formed per row) and mHC (a row per token, dn from a product), with the
// combine's input gradient in the same pass, or without it.
template <class T, class Rows>
Results<T> input_grad_results(const Shape& s, bool with_combine, const Rows& launch) {
  const int width = s.norm_streams() * s.d, m = s.hc ? s.n + 2 : s.n * s.n + 2 * s.n;
  const int64_t rows = kTokens * s.n / s.norm_streams();
  const std::vector<T> dz = random_vector<T>(rows * m, 31), x = random_vector<T>(rows * width, 32),
                       gw = random_vector<T>(size_t(width) * m, 33, 0.3),
                       dn = random_vector<T>(rows * width, 34),
                       dx_in = random_vector<T>(kTokens * s.d, 35),
                       weights = random_vector<T>(kTokens * s.n * s.combine_stride(), 36);
  std::vector<T> rstd = random_vector<T>(rows, 37, 0.2), dx = random_vector<T>(rows * width, 38);
  for (T& r : rstd) r += T(1);
  normed_product_kernels::CombineInputTerm<T> combine;
  if (with_combine) combine = {dx_in.data(), weights.data(), s.combine_stride(), s.n, s.d};
  launch.lanes(rows, normed_product_kernels::InputGrad<T>{dx.data(), s.hc ? nullptr : dn.data(),
                                                          dz.data(), x.data(), gw.data(),
                                                          rstd.data(), width, m, combine});
  return {{with_combine ? "InputGrad dx with the combine term" : "InputGrad dx", dx}};
}

template <class T>
void check_stream_functors(const Shape& s) {
  const std::string shape = std::to_string(sizeof(T) * 8) + "-bit, " + s.name();
  const int width = s.norm_streams() * s.d;
  // Each functor's longest sum runs over its row: d values, or a norm row's width.
  const double tolerance = reorder_tolerance<T, double>(width);
  const bool with_gain = !s.hc;  // both of CombineNorm's paths, each on half of the shapes
  check_on_warp<T>(shape + (with_gain ? ", gain" : ""), tolerance,
                   [&](const auto& rows) { return combine_results<T>(s, with_gain, rows); });

  const Results<T> mixed = check_on_warp<T>(
      shape, tolerance, [&](const auto& rows) { return mix_rstd_results<T>(s, rows); });
  const std::vector<T>&mix_rstd = mixed[1].values, &row_rstd = mixed[2].values;
  if (s.d % kWarpLanes == 0 || s.norm_streams() == 1)
    BOOST_TEST(same_bits(mix_rstd, row_rstd), "MixRstd's rstd is RowRstd's bits, " << shape);
  else
    check_agreement("MixRstd's rstd against RowRstd's, " + shape, mix_rstd, row_rstd, tolerance);

  if (s.n <= stream_kernels::kMaxMixGradStreams) {
    const Results<T> one = check_on_warp<T>(
        shape, tolerance, [&](const auto& rows) { return mix_grad_results<T>(s, true, rows); });
    const Results<T> two = check_on_warp<T>(
        shape, tolerance, [&](const auto& rows) { return mix_grad_results<T>(s, false, rows); });
    for (int i : {0, 1})  // dpost and dmix: the same sums in the same order
      BOOST_TEST(same_bits(one[i].values, two[i].values),
                 one[i].name << " is the two passes' on the warp, " << shape);
  }
  for (bool with_combine : {false, true})
    check_on_warp<T>(shape, tolerance, [&](const auto& rows) {
      return input_grad_results<T>(s, with_combine, rows);
    });
}

}  // namespace

BOOST_AUTO_TEST_CASE(stream_lane_functors_on_a_warp_agree_with_one_lane) {
  for (bool hc : {true, false})
    for (int n : {1, 3, 4})
      for (int d : {1, 31, 32, 33, 100, 1024}) {
        check_stream_functors<float>({n, d, hc});
        check_stream_functors<double>({n, d, hc});
      }
}
