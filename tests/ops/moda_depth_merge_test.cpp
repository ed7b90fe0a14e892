// The MoDA depth merge (ops/moda_depth_merge.hpp), the math the CUDA backend's fast MoDA path
// runs after cuDNN or flash: the CPU attention over the sequence keys plus the merge functions,
// run here on one lane in double, give the CPU backend's MoDA op (forward o and lse; backward
// dq, dk, dv and the depth gradients) to ~1e-12. That proves the log-sum-exp merge and the
// split of the backward (the plain attention backward given the joint o and lse, plus the depth
// part) on the CPU; the GPU kernel runs the same function bodies on a warp.
#define BOOST_TEST_MODULE moda_depth_merge
#define BOOST_TEST_DYN_LINK
#include "ops/moda_depth_merge.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <vector>

#include "ops/cpu/attention.hpp"
#include "ops/cpu/gemm.hpp"
#include "ops/cpu/moda_attention.hpp"
#include "support/gradcheck.hpp"

using namespace db;
using db::test::random_vector;
using Vec = std::vector<double>;

namespace {

constexpr double kTolerance = 1e-12;

struct Sizes {
  size_t q, kv, depth, lse;
  explicit Sizes(const ModaShape& s)
      : q(size_t(s.batch) * s.seq_len * s.heads * s.head_dim),
        kv(size_t(s.batch) * s.seq_len * s.kv_heads * s.head_dim),
        depth(kv * s.depth_stride),
        lse(size_t(s.batch) * s.heads * s.seq_len) {}
};

AttentionShape sequence_part(const ModaShape& s) {
  return {s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim};
}

// max |a − b| / max |b|
double relative_error(const Vec& a, const Vec& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return diff / std::max(scale, 1e-300);
}

// The fast path's forward on the CPU: attention over the sequence keys, then the merge per
// (token, query head).
void merged_forward(Vec& o, Vec& lse, const Vec& q, const Vec& k, const Vec& v, const Vec& dk,
                    const Vec& dv, const ModaShape& s) {
  cpu::attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), sequence_part(s));
  for (int64_t n = 0; n < s.batch * s.seq_len; ++n)
    for (int h = 0; h < s.heads; ++h)
      moda_merge::forward_row<double>(o.data(), lse.data(), q.data(), dk.data(), dv.data(), s, n, h,
                                      HostLanes{});
}

struct Gradients {
  Vec dq, dk, dv, d_depth_k, d_depth_v;
  explicit Gradients(const Sizes& z)
      : dq(z.q), dk(z.kv), dv(z.kv), d_depth_k(z.depth, 0.0), d_depth_v(z.depth, 0.0) {}
};

void check_against_moda_op(const ModaShape& s, uint64_t seed) {
  cpu::set_cpu_threads(1);
  const Sizes z(s);
  const Vec q = random_vector(z.q, seed), k = random_vector(z.kv, seed + 1),
            v = random_vector(z.kv, seed + 2), dk = random_vector(z.depth, seed + 3),
            dv = random_vector(z.depth, seed + 4), d_o = random_vector(z.q, seed + 5);
  BOOST_TEST_MESSAGE("B=" << s.batch << " T=" << s.seq_len << " H=" << s.heads
                          << " H_kv=" << s.kv_heads << " hd=" << s.head_dim << " depth=" << s.depth
                          << "/" << s.depth_stride);

  Vec o_ref(z.q), lse_ref(z.lse), o(z.q), lse(z.lse);
  cpu::moda_attention_forward(o_ref.data(), lse_ref.data(), q.data(), k.data(), v.data(), dk.data(),
                              dv.data(), s);
  merged_forward(o, lse, q, k, v, dk, dv, s);
  BOOST_TEST(relative_error(o, o_ref) < kTolerance);
  BOOST_TEST(relative_error(lse, lse_ref) < kTolerance);

  // Backward: the sequence part is the plain attention backward given the joint o and lse, then
  // the depth part per (token, kv head). Depth gradients start non-zero: both add to them.
  Gradients ref(z), fast(z);
  ref.d_depth_k = fast.d_depth_k = random_vector(z.depth, seed + 6);
  ref.d_depth_v = fast.d_depth_v = random_vector(z.depth, seed + 7);
  cpu::moda_attention_backward(ref.dq.data(), ref.dk.data(), ref.dv.data(), ref.d_depth_k.data(),
                               ref.d_depth_v.data(), d_o.data(), o_ref.data(), lse_ref.data(),
                               q.data(), k.data(), v.data(), dk.data(), dv.data(), s);
  cpu::attention_backward(fast.dq.data(), fast.dk.data(), fast.dv.data(), d_o.data(), o.data(),
                          lse.data(), q.data(), k.data(), v.data(), sequence_part(s));
  for (int64_t n = 0; n < s.batch * s.seq_len; ++n)
    for (int g = 0; g < s.kv_heads; ++g)
      moda_merge::backward_row<double>(fast.dq.data(), fast.d_depth_k.data(), fast.d_depth_v.data(),
                                       d_o.data(), o.data(), lse.data(), q.data(), dk.data(),
                                       dv.data(), s, n, g, HostLanes{});
  BOOST_TEST(relative_error(fast.dq, ref.dq) < kTolerance);
  BOOST_TEST(relative_error(fast.dk, ref.dk) < kTolerance);
  BOOST_TEST(relative_error(fast.dv, ref.dv) < kTolerance);
  BOOST_TEST(relative_error(fast.d_depth_k, ref.d_depth_k) < kTolerance);
  BOOST_TEST(relative_error(fast.d_depth_v, ref.d_depth_v) < kTolerance);
}

}  // namespace

BOOST_AUTO_TEST_CASE(merge_reproduces_the_moda_op_with_grouped_query_heads) {
  check_against_moda_op({2, 7, 4, 2, 6, 3, 5}, 100);  // 3 of 5 stored depth entries read
}

BOOST_AUTO_TEST_CASE(merge_reproduces_the_moda_op_for_mha_mqa_and_odd_head_dims) {
  check_against_moda_op({1, 9, 3, 3, 5, 4, 4}, 200);     // one kv head per query head
  check_against_moda_op({2, 6, 4, 1, 7, 2, 6}, 300);     // one kv head for all four
  check_against_moda_op({1, 33, 2, 1, 64, 6, 10}, 400);  // a suite-like head dim
}

BOOST_AUTO_TEST_CASE(merge_of_large_depth_logits_stays_finite) {
  // Depth logits far above the sequence ones: the online log-sum-exp must not overflow.
  const ModaShape s{1, 5, 2, 1, 4, 3, 3};
  const Sizes z(s);
  Vec q = random_vector(z.q, 500), k = random_vector(z.kv, 501), v = random_vector(z.kv, 502);
  Vec dk = random_vector(z.depth, 503, 400.0), dv = random_vector(z.depth, 504);
  Vec o_ref(z.q), lse_ref(z.lse), o(z.q), lse(z.lse);
  cpu::moda_attention_forward(o_ref.data(), lse_ref.data(), q.data(), k.data(), v.data(), dk.data(),
                              dv.data(), s);
  merged_forward(o, lse, q, k, v, dk, dv, s);
  for (double x : o) BOOST_TEST(std::isfinite(x));
  BOOST_TEST(relative_error(o, o_ref) < kTolerance);
  BOOST_TEST(relative_error(lse, lse_ref) < kTolerance);
}

BOOST_AUTO_TEST_CASE(no_depth_entries_leave_the_attention_unchanged) {
  ModaShape s{1, 4, 2, 1, 4, 0, 2};
  const Sizes z(s);
  Vec q = random_vector(z.q, 600), k = random_vector(z.kv, 601), v = random_vector(z.kv, 602);
  Vec o(z.q), lse(z.lse), o_plain(z.q), lse_plain(z.lse);
  cpu::attention_forward(o_plain.data(), lse_plain.data(), q.data(), k.data(), v.data(),
                         sequence_part(s));
  merged_forward(o, lse, q, k, v, Vec(z.depth), Vec(z.depth), s);
  BOOST_TEST(o == o_plain);
  BOOST_TEST(lse == lse_plain);
}
