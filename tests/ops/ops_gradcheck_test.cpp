// Every CPU op's backward against central finite differences in float64.
#define BOOST_TEST_MODULE ops_gradcheck
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>

#include "ops/cpu/attention.hpp"
#include "ops/cpu/cross_entropy.hpp"
#include "ops/cpu/embedding.hpp"
#include "ops/cpu/linear.hpp"
#include "ops/cpu/rmsnorm.hpp"
#include "ops/cpu/rope.hpp"
#include "ops/cpu/swiglu.hpp"
#include "support/gradcheck.hpp"

using namespace db;
using db::test::dot;
using db::test::max_relative_error;
using db::test::random_vector;
using Vec = std::vector<double>;

constexpr double kTolerance = 1e-6;

BOOST_AUTO_TEST_CASE(linear_backward_matches_finite_differences) {
  const int N = 5, in = 7, out = 3;
  Vec x = random_vector(N * in, 1), W = random_vector(out * in, 2), w = random_vector(N * out, 3);
  Vec y(N * out);
  auto f = [&] {
    cpu::linear_forward(y.data(), x.data(), W.data(), N, in, out);
    return dot(y, w);
  };
  Vec dx(N * in), dW(out * in, 0.0);
  cpu::linear_backward(dx.data(), dW.data(), w.data(), x.data(), W.data(), N, in, out);
  BOOST_TEST(max_relative_error(f, x, dx) < kTolerance);
  BOOST_TEST(max_relative_error(f, W, dW) < kTolerance);
}

BOOST_AUTO_TEST_CASE(rmsnorm_backward_matches_finite_differences) {
  const int N = 4, d = 9;
  Vec x = random_vector(N * d, 4), g = random_vector(d, 5), w = random_vector(N * d, 6);
  Vec y(N * d), rstd(N);
  auto f = [&] {
    cpu::rmsnorm_forward(y.data(), rstd.data(), x.data(), g.data(), N, d, 1e-6);
    return dot(y, w);
  };
  f();
  Vec dx(N * d), dg(d, 0.0);
  cpu::rmsnorm_backward(dx.data(), dg.data(), w.data(), x.data(), g.data(), rstd.data(), N, d);
  BOOST_TEST(max_relative_error(f, x, dx) < kTolerance);
  BOOST_TEST(max_relative_error(f, g, dg) < kTolerance);
}

BOOST_AUTO_TEST_CASE(layernorm_backward_matches_finite_differences) {
  const int N = 4, d = 9;
  Vec x = random_vector(N * d, 7), g = random_vector(d, 8), w = random_vector(N * d, 9);
  Vec y(N * d), mean(N), rstd(N);
  auto f = [&] {
    cpu::layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), g.data(), N, d, 1e-6);
    return dot(y, w);
  };
  f();
  Vec dx(N * d), dg(d, 0.0);
  cpu::layernorm_backward(dx.data(), dg.data(), w.data(), x.data(), g.data(), mean.data(),
                          rstd.data(), N, d);
  BOOST_TEST(max_relative_error(f, x, dx) < kTolerance);
  BOOST_TEST(max_relative_error(f, g, dg) < kTolerance);
}

BOOST_AUTO_TEST_CASE(rope_inverse_is_the_transpose_and_preserves_norm) {
  const int B = 2, T = 5, heads = 3, hd = 6;
  cpu::RopeTable table(T, hd, 10000.0);
  Vec x = random_vector(B * T * heads * hd, 10), w = random_vector(x.size(), 11);
  Vec y = x;
  cpu::rope_apply(y.data(), table, B, T, heads, false);
  auto f = [&] {
    Vec z = x;
    cpu::rope_apply(z.data(), table, B, T, heads, false);
    return dot(z, w);
  };
  Vec dx = w;
  cpu::rope_apply(dx.data(), table, B, T, heads, true);
  BOOST_TEST(max_relative_error(f, x, dx) < kTolerance);
  BOOST_TEST(std::fabs(dot(y, y) - dot(x, x)) < 1e-9 * dot(x, x));
  // Position 0 is not rotated; position 1, pair 0 is rotated by exactly 1 radian.
  BOOST_TEST(y[0] == x[0]);
  const int half = hd / 2;
  const double* x1 = &x[heads * hd];
  BOOST_TEST(std::fabs(y[heads * hd] - (x1[0] * std::cos(1.0) - x1[half] * std::sin(1.0))) < 1e-12);
}

BOOST_AUTO_TEST_CASE(attention_backward_matches_finite_differences_with_gqa) {
  const cpu::AttentionShape s{2, 5, 4, 2, 6};
  const size_t qn = s.batch * s.seq_len * s.heads * s.head_dim;
  const size_t kvn = s.batch * s.seq_len * s.kv_heads * s.head_dim;
  Vec q = random_vector(qn, 12), k = random_vector(kvn, 13), v = random_vector(kvn, 14);
  Vec w = random_vector(qn, 15), o(qn), lse(s.batch * s.heads * s.seq_len);
  auto f = [&] {
    cpu::attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), s);
    return dot(o, w);
  };
  f();
  Vec dq(qn), dk(kvn), dv(kvn);
  cpu::attention_backward(dq.data(), dk.data(), dv.data(), w.data(), o.data(), lse.data(), q.data(),
                          k.data(), v.data(), s);
  BOOST_TEST(max_relative_error(f, q, dq, 200) < kTolerance);
  BOOST_TEST(max_relative_error(f, k, dk, 200) < kTolerance);
  BOOST_TEST(max_relative_error(f, v, dv, 200) < kTolerance);
}

BOOST_AUTO_TEST_CASE(attention_is_causal) {
  const cpu::AttentionShape s{1, 6, 2, 2, 4};
  const size_t n = s.seq_len * s.heads * s.head_dim;
  Vec q = random_vector(n, 16), k = random_vector(n, 17), v = random_vector(n, 18);
  Vec o1(n), o2(n), lse(s.heads * s.seq_len);
  cpu::attention_forward(o1.data(), lse.data(), q.data(), k.data(), v.data(), s);
  for (size_t i = n - s.heads * s.head_dim; i < n; ++i)
    k[i] += 5, v[i] -= 3;  // change the last position
  cpu::attention_forward(o2.data(), lse.data(), q.data(), k.data(), v.data(), s);
  for (size_t i = 0; i < n - s.heads * s.head_dim; ++i) BOOST_TEST(o1[i] == o2[i]);
  // Position 0 attends only to itself: its output equals its value.
  for (int e = 0; e < s.head_dim; ++e) BOOST_TEST(std::fabs(o1[e] - v[e]) < 1e-12);
}

BOOST_AUTO_TEST_CASE(swiglu_backward_matches_finite_differences) {
  const int n = 20;
  Vec a = random_vector(n, 19), b = random_vector(n, 20), w = random_vector(n, 21), h(n);
  auto f = [&] {
    cpu::swiglu_forward(h.data(), a.data(), b.data(), n);
    return dot(h, w);
  };
  Vec da(n), db(n);
  cpu::swiglu_backward(da.data(), db.data(), w.data(), a.data(), b.data(), n);
  BOOST_TEST(max_relative_error(f, a, da) < kTolerance);
  BOOST_TEST(max_relative_error(f, b, db) < kTolerance);
}

BOOST_AUTO_TEST_CASE(embedding_backward_accumulates_repeated_tokens) {
  const int V = 5, d = 3, N = 6;
  std::vector<int32_t> tokens = {1, 3, 1, 0, 4, 1};
  Vec E = random_vector(V * d, 22), w = random_vector(N * d, 23), x(N * d);
  auto f = [&] {
    cpu::embedding_forward(x.data(), tokens.data(), E.data(), N, d);
    return dot(x, w);
  };
  Vec dE(V * d, 0.0);
  cpu::embedding_backward(dE.data(), tokens.data(), w.data(), N, d);
  BOOST_TEST(max_relative_error(f, E, dE) < kTolerance);
  BOOST_TEST(dE[2 * d] == 0.0);  // token 2 never occurs
}

BOOST_AUTO_TEST_CASE(fused_head_cross_entropy_matches_finite_differences_and_logsoftmax) {
  const int N = 300, d = 4, V = 7;  // more rows than one chunk
  Vec h = random_vector(N * d, 24), W = random_vector(V * d, 25);
  std::vector<int32_t> targets(N);
  for (int n = 0; n < N; ++n) targets[n] = (n % 11 == 10) ? -1 : (n * 3) % V;
  const cpu::HeadShape s{N, d, V};
  auto f = [&] {
    return cpu::lm_head_cross_entropy<double>(h.data(), W.data(), targets.data(), s, nullptr,
                                              nullptr, 0);
  };
  Vec dh(N * d), dW(V * d, 0.0);
  const double loss =
      cpu::lm_head_cross_entropy(h.data(), W.data(), targets.data(), s, dh.data(), dW.data(), 1.0);
  BOOST_TEST(max_relative_error(f, h, dh, 200) < kTolerance);
  BOOST_TEST(max_relative_error(f, W, dW) < kTolerance);
  // Direct log-softmax on the plain logits.
  Vec logits(N * V);
  cpu::lm_head_logits(logits.data(), h.data(), W.data(), s);
  double expected = 0;
  for (int n = 0; n < N; ++n) {
    if (targets[n] < 0) continue;
    double sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(logits[n * V + v]);
    expected += std::log(sum) - logits[n * V + targets[n]];
  }
  BOOST_TEST(std::fabs(loss - expected) < 1e-10 * expected);
}
