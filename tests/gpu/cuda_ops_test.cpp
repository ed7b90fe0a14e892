// Every CUDA op against its CPU twin (src/ops/cpu) on fresh random inputs, in fp32 mode (tight)
// and bf16 mode (within the bf16 bounds of gpu_support.hpp). Without a GPU each case prints
// "no GPU: skipped" and passes.
#define BOOST_TEST_MODULE cuda_ops
#define BOOST_TEST_DYN_LINK
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include "gpu/gpu_support.hpp"
#include "ops/cpu/cross_entropy.hpp"
#include "ops/cpu/embedding.hpp"
#include "ops/cpu/linear.hpp"
#include "ops/cpu/rmsnorm.hpp"
#include "ops/cpu/rope.hpp"
#include "ops/cpu/swiglu.hpp"
#include "ops/cuda/adamw.hpp"
#include "ops/cuda/cross_entropy.hpp"
#include "ops/cuda/embedding.hpp"
#include "ops/cuda/gemm.hpp"
#include "ops/cuda/rmsnorm.hpp"
#include "ops/cuda/rope.hpp"
#include "ops/cuda/swiglu.hpp"
#include "train/adamw.hpp"

using namespace db;
using namespace db::test;
using Vec = std::vector<float>;
using ElementTypes = boost::mpl::list<float, cuda::bf16>;

BOOST_AUTO_TEST_CASE_TEMPLATE(linear_matches_cpu, T, ElementTypes) {
  DB_REQUIRE_GPU();
  cuda::GemmHandle gemm;
  struct Shape {
    int N, in, out;
  };
  for (Shape s : {Shape{37, 70, 52}, Shape{256, 128, 384}, Shape{5, 38, 1}}) {
    const Vec x = as_input<T>(random_floats(size_t(s.N) * s.in, 1));
    const Vec W = as_input<T>(random_floats(size_t(s.out) * s.in, 2, 0.1));
    const Vec dy = as_input<T>(random_floats(size_t(s.N) * s.out, 3));
    const Vec dW0 = random_floats(size_t(s.out) * s.in, 4);
    Vec y(size_t(s.N) * s.out), dx(size_t(s.N) * s.in), dW = dW0;
    cpu::linear_forward(y.data(), x.data(), W.data(), s.N, s.in, s.out);
    cpu::linear_backward(dx.data(), dW.data(), dy.data(), x.data(), W.data(), s.N, s.in, s.out);

    auto x_d = to_device<T>(x), W_d = to_device<T>(W), dy_d = to_device<T>(dy);
    cuda::DeviceBuffer<T> y_d(y.size()), dx_d(dx.size());
    cuda::DeviceBuffer<float> dW_d;
    dW_d.upload(dW0);
    cuda::linear_forward(gemm, y_d.data(), x_d.data(), W_d.data(), s.N, s.in, s.out);
    cuda::linear_backward(gemm, dx_d.data(), dW_d.data(), dy_d.data(), x_d.data(), W_d.data(), s.N,
                          s.in, s.out);
    BOOST_TEST(within("linear y", relative_error(to_host(y_d), y), tolerance<T>()));
    BOOST_TEST(within("linear dx", relative_error(to_host(dx_d), dx), tolerance<T>()));
    // dW accumulates in fp32 from (rounded) inputs: fp32 bound in both modes.
    BOOST_TEST(within("linear dW", relative_error(dW_d.download(), dW), kFp32Tolerance));
  }
}

// RMSNorm and LayerNorm for (TX, TY) = (float, float), (bf16, bf16) and (float, bf16).
template <class TX, class TY>
void check_norms(int N, int d, bool accumulate) {
  const double bound =
      std::is_same_v<TX, float> && std::is_same_v<TY, float> ? kFp32Tolerance : kBf16Tolerance;
  const Vec x = as_input<TX>(random_floats(size_t(N) * d, 10, 2.0));
  const Vec g = random_floats(d, 11);
  const Vec dy = as_input<TY>(random_floats(size_t(N) * d, 12));
  const Vec dx0 = as_input<TX>(random_floats(size_t(N) * d, 13));
  const Vec dg0 = random_floats(d, 14);
  for (bool layer : {false, true}) {
    Vec y(x.size()), mean(N), rstd(N), dx = dx0, dg = dg0;
    if (layer) {
      cpu::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), g.data(), N, d, 1e-6);
      cpu::layernorm_backward(dx.data(), dg.data(), dy.data(), x.data(), g.data(), mean.data(),
                              rstd.data(), N, d, accumulate);
    } else {
      cpu::rmsnorm_forward(y.data(), rstd.data(), x.data(), g.data(), N, d, 1e-6);
      cpu::rmsnorm_backward(dx.data(), dg.data(), dy.data(), x.data(), g.data(), rstd.data(), N, d,
                            accumulate);
    }
    auto x_d = to_device<TX>(x), dx_d = to_device<TX>(dx0);
    auto dy_d = to_device<TY>(dy);
    cuda::DeviceBuffer<TY> y_d(y.size());
    cuda::DeviceBuffer<float> g_d, dg_d, mean_d(N), rstd_d(N);
    g_d.upload(g);
    dg_d.upload(dg0);
    if (layer) {
      cuda::layernorm_forward(y_d.data(), mean_d.data(), rstd_d.data(), x_d.data(), g_d.data(), N,
                              d, 1e-6);
      cuda::layernorm_backward(dx_d.data(), dg_d.data(), dy_d.data(), x_d.data(), g_d.data(),
                               mean_d.data(), rstd_d.data(), N, d, accumulate);
    } else {
      cuda::rmsnorm_forward(y_d.data(), rstd_d.data(), x_d.data(), g_d.data(), N, d, 1e-6);
      cuda::rmsnorm_backward(dx_d.data(), dg_d.data(), dy_d.data(), x_d.data(), g_d.data(),
                             rstd_d.data(), N, d, accumulate);
    }
    const char* name = layer ? "layernorm" : "rmsnorm";
    std::printf(" %s N=%d d=%d accumulate=%d\n", name, N, d, int(accumulate));
    BOOST_TEST(within("y", relative_error(to_host(y_d), y), bound));
    BOOST_TEST(within("rstd", relative_error(rstd_d.download(), rstd), kFp32Tolerance));
    if (layer) BOOST_TEST(within("mean", relative_error(mean_d.download(), mean), 1e-4));
    BOOST_TEST(within("dx", relative_error(to_host(dx_d), dx), bound));
    BOOST_TEST(within("dg", relative_error(dg_d.download(), dg), bound));
  }
}

// d = 12280: the backward's 49 120 bytes of dg partials fit 48 KiB alone but not with the
// kernel's static scratch, so the launch must opt in to more shared memory (norm_row.cuh).
BOOST_AUTO_TEST_CASE(norms_match_cpu_in_every_precision) {
  DB_REQUIRE_GPU();
  for (int d : {38, 64, 70, 1024, 2050, 12280})
    for (int N : {1, 33, 100}) {
      check_norms<float, float>(N, d, N == 33);
      check_norms<cuda::bf16, cuda::bf16>(N, d, false);
      check_norms<float, cuda::bf16>(N, d, true);
    }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(rope_matches_cpu_forward_and_inverse, T, ElementTypes) {
  DB_REQUIRE_GPU();
  for (int hd : {34, 38, 50, 70, 76, 128}) {
    const int B = 2, Tn = 37, heads = 3;
    const cpu::RopeTable table(Tn, hd, 10000.0);
    const cuda::RopeTable table_d(Tn, hd, 10000.0);
    const Vec x = as_input<T>(random_floats(size_t(B) * Tn * heads * hd, 20));
    for (bool inverse : {false, true}) {
      Vec y = x;
      cpu::rope_apply(y.data(), table, B, Tn, heads, inverse);
      auto y_d = to_device<T>(x);
      cuda::rope_apply(y_d.data(), table_d, B, Tn, heads, inverse);
      std::printf(" rope hd=%d inverse=%d\n", hd, int(inverse));
      BOOST_TEST(within("rotated", relative_error(to_host(y_d), y), tolerance<T>()));
    }
  }
}

BOOST_AUTO_TEST_CASE_TEMPLATE(swiglu_matches_cpu, T, ElementTypes) {
  DB_REQUIRE_GPU();
  const int64_t n = 10007;
  const Vec a = as_input<T>(random_floats(n, 30, 3.0)), b = as_input<T>(random_floats(n, 31));
  const Vec dh = as_input<T>(random_floats(n, 32));
  Vec h(n), da(n), db(n);
  cpu::swiglu_forward(h.data(), a.data(), b.data(), n);
  cpu::swiglu_backward(da.data(), db.data(), dh.data(), a.data(), b.data(), n);
  auto a_d = to_device<T>(a), b_d = to_device<T>(b), dh_d = to_device<T>(dh);
  cuda::DeviceBuffer<T> h_d(n), da_d(n), db_d(n);
  cuda::swiglu_forward(h_d.data(), a_d.data(), b_d.data(), n);
  cuda::swiglu_backward(da_d.data(), db_d.data(), dh_d.data(), a_d.data(), b_d.data(), n);
  BOOST_TEST(within("swiglu h", relative_error(to_host(h_d), h), tolerance<T>()));
  BOOST_TEST(within("swiglu da", relative_error(to_host(da_d), da), tolerance<T>()));
  BOOST_TEST(within("swiglu db", relative_error(to_host(db_d), db), tolerance<T>()));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(embedding_matches_cpu, T, ElementTypes) {
  DB_REQUIRE_GPU();
  const int V = 50, d = 70;
  const int64_t N = 300;  // every token repeats: the backward must add, not overwrite
  std::vector<int32_t> tokens(N);
  Rng rng(40);
  for (auto& t : tokens) t = int32_t(rng.below(V));
  const Vec E = random_floats(size_t(V) * d, 41);
  const Vec dx = as_input<T>(random_floats(size_t(N) * d, 42));
  const Vec dE0 = random_floats(size_t(V) * d, 43);
  Vec x(size_t(N) * d), dE = dE0;
  cpu::embedding_forward(x.data(), tokens.data(), E.data(), N, d);
  cpu::embedding_backward(dE.data(), tokens.data(), dx.data(), N, d);
  cuda::DeviceBuffer<int32_t> tokens_d;
  tokens_d.upload(tokens);
  cuda::DeviceBuffer<float> E_d, dE_d;
  E_d.upload(E);
  dE_d.upload(dE0);
  cuda::DeviceBuffer<T> x_d(x.size());
  auto dx_d = to_device<T>(dx);
  cuda::embedding_forward(x_d.data(), tokens_d.data(), E_d.data(), N, d);
  cuda::embedding_backward(dE_d.data(), tokens_d.data(), dx_d.data(), N, d);
  BOOST_TEST(within("embedding x", relative_error(to_host(x_d), as_input<T>(x)), 0.0));
  BOOST_TEST(within("embedding dE", relative_error(dE_d.download(), dE), kFp32Tolerance));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(fused_cross_entropy_matches_cpu, T, ElementTypes) {
  DB_REQUIRE_GPU();
  cuda::GemmHandle gemm;
  // 4100 rows cross the 4096-row chunk; vocab 257 gives odd leading dimensions.
  const std::vector<std::tuple<int64_t, int, int>> shapes{{4100, 64, 257}, {77, 38, 1000}};
  for (const auto& [rows, d, vocab] : shapes) {
    const cpu::HeadShape s{rows, d, vocab};
    const Vec h = as_input<T>(random_floats(size_t(rows) * d, 50));
    const Vec W = as_input<T>(random_floats(size_t(vocab) * d, 51, 0.3));
    std::vector<int32_t> targets(rows);
    Rng rng(52);
    for (auto& t : targets) t = rng.uniform() < 0.1 ? -1 : int32_t(rng.below(vocab));
    const Vec dW0 = random_floats(size_t(vocab) * d, 53, 0.01);
    const double scale = 1.0 / double(rows);
    Vec dh(h.size()), dW = dW0;
    const double loss = cpu::lm_head_cross_entropy(h.data(), W.data(), targets.data(), s, dh.data(),
                                                   dW.data(), scale);
    auto h_d = to_device<T>(h), W_d = to_device<T>(W);
    cuda::DeviceBuffer<int32_t> targets_d;
    targets_d.upload(targets);
    cuda::DeviceBuffer<T> dh_d(h.size());
    cuda::DeviceBuffer<float> dW_d;
    dW_d.upload(dW0);
    const double loss_d = cuda::lm_head_cross_entropy(
        gemm, h_d.data(), W_d.data(), targets_d.data(), s, dh_d.data(), dW_d.data(), scale);
    std::printf(" cross-entropy rows=%lld d=%d vocab=%d loss cpu %.8g gpu %.8g\n", (long long)rows,
                d, vocab, loss, loss_d);
    // The loss comes from fp32 logits in both modes (bf16 only rounds the inputs).
    BOOST_TEST(within("loss", std::fabs(loss_d - loss) / std::fabs(loss), kFp32Tolerance));
    BOOST_TEST(within("dh", relative_error(to_host(dh_d), dh), tolerance<T>()));
    BOOST_TEST(within("dW", relative_error(dW_d.download(), dW), tolerance<T>()));
  }
}

BOOST_AUTO_TEST_CASE(adamw_and_global_norm_match_cpu) {
  DB_REQUIRE_GPU();
  const int64_t n = 100003;
  Vec values = random_floats(n, 60), m(n, 0.f), v(n, 0.f);
  std::vector<uint8_t> decay(n);
  for (int64_t i = 0; i < n; ++i) decay[i] = uint8_t(i % 3 != 0);
  cuda::DeviceBuffer<float> values_d, grads_d, m_d(n), v_d(n);
  values_d.upload(values);
  m_d.zero();
  v_d.zero();
  cuda::DeviceBuffer<uint8_t> decay_d;
  decay_d.upload(decay);
  cuda::DeviceBuffer<double> norm_sq_d(1);
  cuda::DeviceBuffer<cuda::bf16> values_bf16_d(n);
  const double lr = 3e-3, b1 = 0.9, b2 = 0.95, eps = 1e-8, wd = 0.1, grad_clip = 50.0;
  for (int64_t t = 1; t <= 3; ++t) {
    const Vec grads = random_floats(n, 61 + t, 0.5);
    grads_d.upload(grads);
    const double norm = global_norm<float>(std::span<const float>(grads));
    const double norm_d = cuda::global_norm(grads_d.data(), n);
    BOOST_TEST(within("global norm", std::fabs(norm_d - norm) / norm, 1e-12));
    // The reference: train/adamw.cpp's formulas, with the clip scale the trainer computes.
    const double clip = norm > grad_clip ? grad_clip / norm : 1.0;
    const double bias1 = 1 - std::pow(b1, double(t)), bias2 = 1 - std::pow(b2, double(t));
    for (int64_t i = 0; i < n; ++i) {
      const double g = double(grads[i]) * clip;
      const double mi = b1 * m[i] + (1 - b1) * g, vi = b2 * v[i] + (1 - b2) * g * g;
      m[i] = float(mi);
      v[i] = float(vi);
      double p = values[i];
      if (decay[i]) p -= lr * wd * p;
      p -= lr * (mi / bias1) / (std::sqrt(vi / bias2) + eps);
      values[i] = float(p);
    }
    cuda::global_norm_squared(norm_sq_d.data(), grads_d.data(), n);
    cuda::AdamWStep step;
    step.lr = lr;
    step.beta1 = b1;
    step.beta2 = b2;
    step.eps = eps;
    step.weight_decay = wd;
    step.step = t;
    step.norm_sq = norm_sq_d.data();  // clip on the device
    step.grad_clip = grad_clip;
    cuda::adamw_step(values_d.data(), grads_d.data(), m_d.data(), v_d.data(), decay_d.data(), n,
                     step, values_bf16_d.data());
    BOOST_TEST(within("adamw values", relative_error(values_d.download(), values), 1e-6));
    BOOST_TEST(within("adamw m", relative_error(m_d.download(), m), 1e-6));
    BOOST_TEST(within("adamw v", relative_error(v_d.download(), v), 1e-6));
    BOOST_TEST(
        within("adamw bf16 copy", relative_error(to_host(values_bf16_d), values), kBf16Tolerance));
  }
}
