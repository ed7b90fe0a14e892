// The LM head + cross-entropy of the CUDA ops object in both precision modes
// (ops/cuda/cross_entropy.hpp): in bf16 the head narrows the float h and W to bf16 itself and
// runs bf16 GEMMs with bf16 dlogits, so its loss, dh and dW are compared with the CPU's float head
// on the unrounded inputs (bf16 bound of gpu_support.hpp), and its loss with the CPU's on the
// bf16-rounded inputs: with fp32 activation storage the logits, softmax and loss stay fp32 (fp32
// bound); with bf16 storage the logits are rounded to bf16 once, so the reference rounds the
// CPU's logits too, and must tell the two apart. In fp32 the ops object must run exactly the
// fp32 head, bit for bit. Without a GPU each case prints "no GPU: skipped" and passes.
#define BOOST_TEST_MODULE cuda_bf16_head
#define BOOST_TEST_DYN_LINK
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <numeric>
#include <tuple>
#include <vector>

#include "gpu/gpu_support.hpp"
#include "ops/cpu/cpu_ops.hpp"
#include "ops/cuda/cross_entropy.hpp"
#include "ops/cuda/cuda_ops.hpp"

using namespace db;
using namespace db::test;
using Vec = std::vector<float>;
using cuda::DeviceBuffer;

namespace {

// One head problem: inputs on both sides and the starting dW (the head adds to it).
struct HeadCase {
  HeadShape s;
  Vec h, W, dW0;
  std::vector<int32_t> targets;
  DeviceBuffer<int32_t> targets_gpu;
  double grad_scale;

  HeadCase(int64_t rows, int d, int vocab, uint64_t seed)
      : s{rows, d, vocab},
        h(random_floats(size_t(rows) * d, seed)),
        W(random_floats(size_t(vocab) * d, seed + 1, 0.3)),
        dW0(random_floats(size_t(vocab) * d, seed + 2, 0.01)),
        targets(rows),
        grad_scale(1.0 / double(rows)) {
    Rng rng(seed + 3);
    for (auto& t : targets) t = rng.uniform() < 0.1 ? -1 : int32_t(rng.below(vocab));
    targets_gpu.upload(targets);
  }
};

// What one head call gives back: the summed loss, dh and dW.
struct HeadResult {
  double loss = 0;
  Vec dh, dW;
};

HeadResult cpu_head(const HeadCase& c, const Vec& h, const Vec& W) {
  auto cpu = make_cpu_ops<float>();
  HeadResult r{0.0, Vec(h.size()), c.dW0};
  cpu->cross_entropy(&r.loss, h.data(), W.data(), c.targets.data(), c.s, r.dh.data(), r.dW.data(),
                     c.grad_scale);
  return r;
}

// dh starts with random values: the head must overwrite it.
HeadResult gpu_head(Ops<float>& ops, const HeadCase& c) {
  auto h = to_device<float>(c.h), W = to_device<float>(c.W), dW = to_device<float>(c.dW0);
  auto dh = to_device<float>(random_floats(c.h.size(), 99));
  DeviceBuffer<double> loss(1);
  loss.zero();
  ops.cross_entropy(loss.data(), h.data(), W.data(), c.targets_gpu.data(), c.s, dh.data(),
                    dW.data(), c.grad_scale);
  return {loss.download()[0], dh.download(), dW.download()};
}

std::vector<double> gpu_row_losses(Ops<float>& ops, const HeadCase& c) {
  auto h = to_device<float>(c.h), W = to_device<float>(c.W);
  std::vector<double> losses(c.s.rows);
  ops.cross_entropy_rows(losses.data(), h.data(), W.data(), c.targets_gpu.data(), c.s);
  return losses;
}

Vec as_floats(const std::vector<double>& v) {
  return Vec(v.begin(), v.end());
}

// Each row's loss (0 where target < 0) from the CPU's float logits of h·Wᵀ, rounded to bf16
// first when `round_logits`, in double.
std::vector<double> reference_row_losses(const HeadCase& c, const Vec& h, const Vec& W,
                                         bool round_logits) {
  Vec logits(size_t(c.s.rows) * c.s.vocab);
  make_cpu_ops<float>()->logits(logits.data(), h.data(), W.data(), c.s);
  if (round_logits) logits = rounded_bf16(std::move(logits));
  std::vector<double> losses(c.s.rows, 0.0);
  for (int64_t r = 0; r < c.s.rows; ++r) {
    if (c.targets[r] < 0) continue;
    const float* row = &logits[size_t(r) * c.s.vocab];
    const double m = *std::max_element(row, row + c.s.vocab);
    double sum = 0;
    for (int v = 0; v < c.s.vocab; ++v) sum += std::exp(double(row[v]) - m);
    losses[r] = m + std::log(sum) - row[c.targets[r]];
  }
  return losses;
}

// The mean over rows of |a − b| (nats).
double mean_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += std::fabs(a[i] - b[i]);
  return sum / double(a.size());
}

// The logits here are of order 1–4 (σ ≈ 2); rounding them to bf16 moves each by up to half a
// bf16 step (2⁻⁸ to 2⁻⁶) and a row's loss by ≈ 2·10⁻³ nats on average. A mean row difference
// above this bound is that rounding; below it, the order of the sums (the GPU's and the CPU's
// fp32 logits falling on either side of a bf16 rounding boundary: rare, ≈ 10⁻⁶ on average).
constexpr double kRowLossBound = 1e-4;

// 4100 rows cross the 4096-row chunk; vocab 257 and d = 38 give odd leading dimensions.
const std::vector<std::tuple<int64_t, int, int>> kShapes{{4100, 64, 257}, {77, 38, 1000}};

}  // namespace

BOOST_AUTO_TEST_CASE(bf16_head_matches_the_cpu_float_head_within_bf16_tolerance) {
  DB_REQUIRE_GPU();
  for (const ActivationDtype storage : {ActivationDtype::bf16, ActivationDtype::fp32}) {
    const bool bf16_logits = storage == ActivationDtype::bf16;
    auto gpu = cuda::make_cuda_ops({.precision = Precision::bf16, .activation_dtype = storage});
    uint64_t seed = 200;
    for (const auto& [rows, d, vocab] : kShapes) {
      const HeadCase c(rows, d, vocab, seed += 10);
      std::printf(" bf16 head, %s logits, rows=%lld d=%d vocab=%d\n", bf16_logits ? "bf16" : "fp32",
                  (long long)rows, d, vocab);
      const HeadResult want = cpu_head(c, c.h, c.W);
      const HeadResult got = gpu_head(*gpu, c);
      BOOST_TEST(within("loss vs float inputs", std::fabs(got.loss - want.loss) / want.loss,
                        kBf16Tolerance));
      BOOST_TEST(
          within("dh (float, overwritten)", relative_error(got.dh, want.dh), kBf16Tolerance));
      BOOST_TEST(within("dW (float, added to)", relative_error(got.dW, want.dW), kBf16Tolerance));
      // The GEMMs saw bf16 h and W: the loss is the float head's on the rounded inputs, its
      // logits rounded to bf16 where the head stores them so, up to the order of additions.
      const Vec h_rounded = rounded_bf16(c.h), W_rounded = rounded_bf16(c.W);
      const std::vector<double> want_rows =
          reference_row_losses(c, h_rounded, W_rounded, bf16_logits);
      const double want_loss = std::accumulate(want_rows.begin(), want_rows.end(), 0.0);
      BOOST_TEST(within("loss vs bf16-rounded inputs", std::fabs(got.loss - want_loss) / want_loss,
                        kFp32Tolerance));
      const std::vector<double> got_rows = gpu_row_losses(*gpu, c);
      BOOST_TEST(within("row losses vs bf16-rounded inputs, mean |difference|",
                        mean_abs_difference(got_rows, want_rows), kRowLossBound));
      // The other reference is measurably off: the logits really are (or are not) rounded.
      const double other = mean_abs_difference(
          got_rows, reference_row_losses(c, h_rounded, W_rounded, !bf16_logits));
      std::printf("  mean |row loss difference| from the %s-logit reference: %.2e\n",
                  bf16_logits ? "fp32" : "bf16", other);
      BOOST_TEST(other > kRowLossBound);
    }
  }
}

BOOST_AUTO_TEST_CASE(fp32_mode_runs_the_fp32_head_bit_for_bit) {
  DB_REQUIRE_GPU();
  auto gpu = cuda::make_cuda_ops({.precision = Precision::fp32});
  cuda::GemmHandle parity_gemm;  // fp32 products, as the fp32 ops object's
  uint64_t seed = 300;
  for (const auto& [rows, d, vocab] : kShapes) {
    const HeadCase c(rows, d, vocab, seed += 10);
    std::printf(" fp32 head rows=%lld d=%d vocab=%d\n", (long long)rows, d, vocab);
    const HeadResult got = gpu_head(*gpu, c);
    auto h = to_device<float>(c.h), W = to_device<float>(c.W), dW = to_device<float>(c.dW0);
    DeviceBuffer<float> dh(c.h.size());
    const double loss =
        cuda::lm_head_cross_entropy(parity_gemm, h.data(), W.data(), c.targets_gpu.data(), c.s,
                                    dh.data(), dW.data(), c.grad_scale);
    BOOST_TEST(got.loss == loss);
    BOOST_TEST((got.dh == dh.download()), "dh bit for bit");
    BOOST_TEST((got.dW == dW.download()), "dW bit for bit");
    std::vector<double> rows_want(rows);
    cuda::lm_head_row_losses(parity_gemm, rows_want.data(), h.data(), W.data(),
                             c.targets_gpu.data(), c.s);
    BOOST_TEST((gpu_row_losses(*gpu, c) == rows_want), "row losses bit for bit");
  }
}
