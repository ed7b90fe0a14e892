// MoDA attention (spec §6): the joint softmax over causal sequence keys and same-token depth
// entries, forward against a direct evaluation and backward against finite differences.
#define BOOST_TEST_MODULE moda_attention
#define BOOST_TEST_DYN_LINK
#include "ops/cpu/moda_attention.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>

#include "ops/cpu/attention.hpp"
#include "ops/cpu/gemm.hpp"
#include "support/gradcheck.hpp"

using namespace db;
using db::test::dot;
using db::test::max_relative_error;
using db::test::random_vector;
using Vec = std::vector<double>;

namespace {

// GQA (4 query heads on 2 kv heads), 3 of 5 stored depth entries read.
const cpu::ModaShape kShape{2, 5, 4, 2, 6, 3, 5};

size_t q_size(const cpu::ModaShape& s) {
  return s.batch * s.seq_len * s.heads * s.head_dim;
}
size_t kv_size(const cpu::ModaShape& s) {
  return s.batch * s.seq_len * s.kv_heads * s.head_dim;
}
size_t depth_size(const cpu::ModaShape& s) {
  return kv_size(s) * s.depth_stride;
}

// o for one (row n, head h) straight from the definition, one softmax over both kinds of keys.
Vec direct_output(const Vec& q, const Vec& k, const Vec& v, const Vec& dk, const Vec& dv,
                  const cpu::ModaShape& s, int64_t b, int t, int h) {
  const int hd = s.head_dim, g = h / (s.heads / s.kv_heads);
  const double scale = 1.0 / std::sqrt(double(hd));
  const double* qi = &q[((b * s.seq_len + t) * s.heads + h) * hd];
  std::vector<std::pair<double, const double*>> entries;  // (logit, value)
  auto add = [&](const double* key, const double* value) {
    double l = 0;
    for (int e = 0; e < hd; ++e) l += qi[e] * key[e];
    entries.push_back({l * scale, value});
  };
  for (int j = 0; j <= t; ++j) {
    const size_t at = ((b * s.seq_len + j) * s.kv_heads + g) * hd;
    add(&k[at], &v[at]);
  }
  for (int m = 0; m < s.depth; ++m) {
    const size_t at = (((b * s.seq_len + t) * s.depth_stride + m) * s.kv_heads + g) * hd;
    add(&dk[at], &dv[at]);
  }
  double mx = -1e300, sum = 0;
  for (auto& e : entries) mx = std::max(mx, e.first);
  for (auto& e : entries) sum += std::exp(e.first - mx);
  Vec o(hd, 0.0);
  for (auto& e : entries)
    for (int i = 0; i < hd; ++i) o[i] += std::exp(e.first - mx) / sum * e.second[i];
  return o;
}

}  // namespace

BOOST_AUTO_TEST_CASE(moda_forward_is_one_softmax_over_sequence_and_depth_entries) {
  cpu::set_cpu_threads(1);
  const cpu::ModaShape& s = kShape;
  Vec q = random_vector(q_size(s), 1), k = random_vector(kv_size(s), 2),
      v = random_vector(kv_size(s), 3);
  Vec dk = random_vector(depth_size(s), 4), dv = random_vector(depth_size(s), 5);
  Vec o(q_size(s)), lse(s.batch * s.heads * s.seq_len);
  cpu::moda_attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), dk.data(),
                              dv.data(), s);
  double worst = 0;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int t = 0; t < s.seq_len; ++t)
      for (int h = 0; h < s.heads; ++h) {
        const Vec ref = direct_output(q, k, v, dk, dv, s, b, t, h);
        for (int e = 0; e < s.head_dim; ++e)
          worst = std::max(
              worst, std::fabs(ref[e] - o[((b * s.seq_len + t) * s.heads + h) * s.head_dim + e]));
      }
  BOOST_TEST(worst < 1e-13);
}

BOOST_AUTO_TEST_CASE(moda_without_depth_entries_is_causal_attention) {
  cpu::set_cpu_threads(1);
  cpu::ModaShape s = kShape;
  s.depth = 0;
  const cpu::AttentionShape a{s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim};
  Vec q = random_vector(q_size(s), 6), k = random_vector(kv_size(s), 7),
      v = random_vector(kv_size(s), 8);
  Vec o1(q_size(s)), o2(q_size(s)), lse1(s.batch * s.heads * s.seq_len), lse2(lse1.size());
  cpu::attention_forward(o1.data(), lse1.data(), q.data(), k.data(), v.data(), a);
  cpu::moda_attention_forward(o2.data(), lse2.data(), q.data(), k.data(), v.data(),
                              static_cast<const double*>(nullptr),
                              static_cast<const double*>(nullptr), s);
  for (size_t i = 0; i < o1.size(); ++i) BOOST_TEST(std::fabs(o1[i] - o2[i]) < 1e-14);
  for (size_t i = 0; i < lse1.size(); ++i) BOOST_TEST(std::fabs(lse1[i] - lse2[i]) < 1e-14);
}

BOOST_AUTO_TEST_CASE(moda_backward_matches_finite_differences_with_gqa) {
  cpu::set_cpu_threads(1);
  const cpu::ModaShape& s = kShape;
  Vec q = random_vector(q_size(s), 9), k = random_vector(kv_size(s), 10),
      v = random_vector(kv_size(s), 11);
  Vec dk = random_vector(depth_size(s), 12), dv = random_vector(depth_size(s), 13);
  Vec w = random_vector(q_size(s), 14), o(q_size(s)), lse(s.batch * s.heads * s.seq_len);
  auto f = [&] {
    cpu::moda_attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), dk.data(),
                                dv.data(), s);
    return dot(o, w);
  };
  f();
  Vec gq(q.size()), gk(k.size()), gv(v.size());
  Vec gdk(dk.size(), 0.0), gdv(dv.size(), 0.0);
  cpu::moda_attention_backward(gq.data(), gk.data(), gv.data(), gdk.data(), gdv.data(), w.data(),
                               o.data(), lse.data(), q.data(), k.data(), v.data(), dk.data(),
                               dv.data(), s);
  BOOST_TEST(max_relative_error(f, q, gq, 200) < 1e-6);
  BOOST_TEST(max_relative_error(f, k, gk, 200) < 1e-6);
  BOOST_TEST(max_relative_error(f, v, gv, 200) < 1e-6);
  BOOST_TEST(max_relative_error(f, dk, gdk, 400) < 1e-6);
  BOOST_TEST(max_relative_error(f, dv, gdv, 400) < 1e-6);
  // Entries beyond `depth` are not read: their gradient stays exactly zero.
  for (size_t n = 0; n < size_t(s.batch * s.seq_len); ++n)
    for (int m = s.depth; m < s.depth_stride; ++m)
      for (int e = 0; e < s.kv_heads * s.head_dim; ++e) {
        BOOST_TEST(gdk[(n * s.depth_stride + m) * s.kv_heads * s.head_dim + e] == 0.0);
        BOOST_TEST(gdv[(n * s.depth_stride + m) * s.kv_heads * s.head_dim + e] == 0.0);
      }
}

BOOST_AUTO_TEST_CASE(moda_float_matches_double) {
  cpu::set_cpu_threads(1);
  const cpu::ModaShape& s = kShape;
  Vec q = random_vector(q_size(s), 15), k = random_vector(kv_size(s), 16),
      v = random_vector(kv_size(s), 17);
  Vec dk = random_vector(depth_size(s), 18), dv = random_vector(depth_size(s), 19);
  Vec o(q_size(s)), lse(s.batch * s.heads * s.seq_len);
  cpu::moda_attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), dk.data(),
                              dv.data(), s);
  auto as_float = [](const Vec& x) { return std::vector<float>(x.begin(), x.end()); };
  std::vector<float> qf = as_float(q), kf = as_float(k), vf = as_float(v), dkf = as_float(dk),
                     dvf = as_float(dv), of(o.size()), lsef(lse.size());
  cpu::moda_attention_forward(of.data(), lsef.data(), qf.data(), kf.data(), vf.data(), dkf.data(),
                              dvf.data(), s);
  for (size_t i = 0; i < o.size(); ++i) BOOST_TEST(std::fabs(of[i] - o[i]) < 1e-5);
}
