// The storage type of train.activation_dtype = bf16 and the CPU's storage ops on it
// (core/bfloat16.hpp, ops/storage_ops_widening.hpp, ops/storage_ops_same_type.hpp):
// bf16 rounding is CUDA's (nearest, ties to even, overflow to infinity, one canonical NaN);
// the widening ops compute in float on the stored values and round once where they store, add
// into an output with one rounding, and move stored bits unchanged; S = T forwards to Ops<T>
// bit for bit.
#define BOOST_TEST_MODULE storage_ops
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/bfloat16.hpp"
#include "core/rng.hpp"
#include "ops/cpu/cpu_ops.hpp"
#include "ops/storage_ops_same_type.hpp"
#include "support/bf16_values.hpp"

using namespace db;
using db::test::to_bf16;

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

std::vector<float> widened(const std::vector<bfloat16>& x) {
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = to_float(x[i]);
  return out;
}

std::vector<float> random_values(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = float(rng.uniform() * 2 - 1);
  return v;
}

}  // namespace

BOOST_AUTO_TEST_CASE(rounding_is_to_nearest_with_ties_to_even) {
  BOOST_TEST(to_bfloat16(1.0f).bits == 0x3f80);
  BOOST_TEST(to_bfloat16(-2.0f).bits == 0xc000);
  BOOST_TEST(to_bfloat16(from_bits(0x3f808000)).bits == 0x3f80);  // tie, even below
  BOOST_TEST(to_bfloat16(from_bits(0x3f818000)).bits == 0x3f82);  // tie, even above
  BOOST_TEST(to_bfloat16(from_bits(0x3f808001)).bits == 0x3f81);  // just above the tie
  BOOST_TEST(to_bfloat16(from_bits(0x3f807fff)).bits == 0x3f80);  // just below
  BOOST_TEST(to_bfloat16(-0.0f).bits == 0x8000);
  BOOST_TEST(to_bfloat16(from_bits(0x00000001)).bits == 0x0000);  // the smallest subnormal
  BOOST_TEST(to_bfloat16(std::numeric_limits<float>::max()).bits == 0x7f80);  // overflows to inf
  BOOST_TEST(to_bfloat16(std::numeric_limits<float>::infinity()).bits == 0x7f80);
  BOOST_TEST(to_bfloat16(std::nanf("")).bits == 0x7fff);
  BOOST_TEST(to_bfloat16(-std::numeric_limits<float>::quiet_NaN()).bits == 0x7fff);
  BOOST_TEST(to_bfloat16(from_bits(0x7f800001)).bits == 0x7fff);  // a signalling NaN
  for (uint32_t bits : {0x0000u, 0x3f80u, 0xc2f7u, 0x0001u, 0x7f7fu, 0xff80u})
    BOOST_TEST(to_bfloat16(to_float(bfloat16{uint16_t(bits)})).bits == bits);  // exact both ways
}

BOOST_AUTO_TEST_CASE(widening_ops_compute_in_float_and_round_once_where_they_store) {
  auto ops = make_cpu_ops<float>();
  StorageOps<float, bfloat16>& s = *ops->bf16_storage();
  const int rows = 5, in = 7, out = 3;
  const auto x = to_bf16(random_values(rows * in, 1)), W = to_bf16(random_values(out * in, 2));
  const auto dy = to_bf16(random_values(rows * out, 3));
  // y = x·Wᵀ on the stored values, rounded once.
  std::vector<bfloat16> y(rows * out);
  s.linear_forward(y.data(), x.data(), W.data(), rows, in, out);
  std::vector<float> y_float(rows * out);
  ops->linear_forward(y_float.data(), widened(x).data(), widened(W).data(), rows, in, out);
  BOOST_TEST(widened(y) == widened(to_bf16(y_float)));
  // dx += dy·W: the old dx and the product added in float, rounded once; dW added in float.
  const std::vector<bfloat16> dx_before = to_bf16(random_values(rows * in, 4));
  std::vector<bfloat16> dx = dx_before;
  std::vector<float> dW(out * in, 0.5f), dW_float(out * in, 0.5f);
  s.linear_backward(dx.data(), dW.data(), dy.data(), x.data(), W.data(), rows, in, out, true);
  std::vector<float> dx_float = widened(dx_before);
  ops->linear_backward(dx_float.data(), dW_float.data(), widened(dy).data(), widened(x).data(),
                       widened(W).data(), rows, in, out, true);
  BOOST_TEST(widened(dx) == widened(to_bf16(dx_float)));
  BOOST_TEST(dW == dW_float);
}

BOOST_AUTO_TEST_CASE(copies_move_the_stored_bits_and_leave_the_rest) {
  auto ops = make_cpu_ops<float>();
  StorageOps<float, bfloat16>& s = *ops->bf16_storage();
  const auto src = to_bf16(random_values(4 * 6, 5));
  std::vector<bfloat16> dst = to_bf16(random_values(4 * 10, 6));
  const std::vector<bfloat16> before = dst;
  s.copy_rows(dst.data() + 2, 10, src.data(), 6, 4, 5);  // 5 of 6 values into the middle of 10
  for (int r = 0; r < 4; ++r)
    for (int j = 0; j < 10; ++j) {
      const bool copied = j >= 2 && j < 7;
      const uint16_t expected = copied ? src[r * 6 + j - 2].bits : before[r * 10 + j].bits;
      BOOST_TEST(dst[r * 10 + j].bits == expected);
    }
  std::vector<bfloat16> copy(src.size());
  s.copy(copy.data(), src.data(), int64_t(src.size()));
  for (size_t i = 0; i < src.size(); ++i) BOOST_TEST(copy[i].bits == src[i].bits);
}

BOOST_AUTO_TEST_CASE(the_same_type_storage_is_the_ops_call_bit_for_bit) {
  auto ops = make_cpu_ops<double>();
  SameTypeStorageOps<double> s(*ops);
  const AttentionShape shape{2, 6, 4, 2, 8};
  const int64_t nq = 2 * 6 * 4 * 8, nkv = 2 * 6 * 2 * 8;
  Rng rng(9);
  auto values = [&](int64_t n) {
    std::vector<double> v(n);
    for (double& x : v) x = rng.uniform() - 0.5;
    return v;
  };
  const auto q = values(nq), k = values(nkv), v = values(nkv);
  std::vector<double> o1(nq), o2(nq), lse1(2 * 6 * 4), lse2(2 * 6 * 4);
  s.attention_forward(o1.data(), lse1.data(), q.data(), k.data(), v.data(), shape);
  ops->attention_forward(o2.data(), lse2.data(), q.data(), k.data(), v.data(), shape);
  BOOST_TEST(o1 == o2);
  BOOST_TEST(lse1 == lse2);
  BOOST_TEST(ops->bf16_storage() == nullptr);  // double stores what it computes
}

namespace {

template <class V>
bool same_bits(const std::vector<V>& a, const std::vector<V>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(V)) == 0;
}

// The fused forms of the attention core's QK-norm and RoPE (rope_qk, qk_norm_rope_forward,
// qk_norm_rope_backward) against the calls they stand for, on storage s: the same bits, the
// optional unrotated output and gradient included. to_s makes a stored value from a float.
template <class T, class S, class ToS>
void fused_qk_calls_give_the_separate_calls_bits(StorageOps<T, S>& s, ToS to_s) {
  const int64_t batch = 2;
  const int seq_len = 5, heads = 3, kv_heads = 1, hd = 8;
  const int64_t rows = batch * seq_len * heads, n = rows * hd, nk = batch * seq_len * kv_heads * hd;
  const double eps = 1e-6, theta = 10000.0;
  uint64_t seed = 20;
  auto values = [&](int64_t count) {
    std::vector<S> v(count);
    const std::vector<float> f = random_values(size_t(count), seed++);
    for (int64_t i = 0; i < count; ++i) v[i] = to_s(3 * f[i]);
    return v;
  };
  std::vector<T> gain(hd);
  for (int j = 0; j < hd; ++j) gain[j] = T(1 + 0.1 * j);

  // RoPE on q and k in one call, both ways.
  for (bool inverse : {false, true}) {
    std::vector<S> q1 = values(n), k1 = values(nk), q2 = q1, k2 = k1;
    s.rope_qk(q1.data(), heads, k1.data(), kv_heads, batch, seq_len, hd, theta, inverse);
    s.rope(q2.data(), batch, seq_len, heads, hd, theta, inverse);
    s.rope(k2.data(), batch, seq_len, kv_heads, hd, theta, inverse);
    BOOST_TEST(same_bits(q1, q2));
    BOOST_TEST(same_bits(k1, k2));
  }

  // Forward: norm, the unrotated copy, RoPE.
  const std::vector<S> x = values(n);
  std::vector<S> y1(n), y2(n), unrotated1(n), unrotated2(n);
  std::vector<T> rstd1(rows), rstd2(rows);
  s.qk_norm_rope_forward(y1.data(), rstd1.data(), unrotated1.data(), x.data(), gain.data(), batch,
                         seq_len, heads, hd, eps, theta);
  s.rmsnorm_forward(y2.data(), rstd2.data(), x.data(), gain.data(), rows, hd, eps);
  s.copy(unrotated2.data(), y2.data(), n);
  s.rope(y2.data(), batch, seq_len, heads, hd, theta, false);
  BOOST_TEST(same_bits(y1, y2));
  BOOST_TEST(same_bits(rstd1, rstd2));
  BOOST_TEST(same_bits(unrotated1, unrotated2));
  std::vector<S> y3(n);  // without the unrotated copy
  s.qk_norm_rope_forward(y3.data(), rstd1.data(), nullptr, x.data(), gain.data(), batch, seq_len,
                         heads, hd, eps, theta);
  BOOST_TEST(same_bits(y3, y2));

  // Backward: RoPE back, the further gradient added, the norm's backward (dgain added to).
  for (bool with_unrotated_gradient : {false, true}) {
    std::vector<S> dy1 = values(n), dy2 = dy1, dx1 = values(n), dx2(n);
    const std::vector<S> dy_unrotated = values(n);
    std::vector<T> dgain1(hd, T(0.5)), dgain2(hd, T(0.5));
    const S* extra = with_unrotated_gradient ? dy_unrotated.data() : nullptr;
    s.qk_norm_rope_backward(dx1.data(), dgain1.data(), dy1.data(), extra, x.data(), gain.data(),
                            rstd2.data(), batch, seq_len, heads, hd, theta);
    s.rope(dy2.data(), batch, seq_len, heads, hd, theta, true);
    if (extra) s.axpby(dy2.data(), T(1), extra, T(1), n);
    s.rmsnorm_backward(dx2.data(), dgain2.data(), dy2.data(), x.data(), gain.data(), rstd2.data(),
                       rows, hd, false);
    BOOST_TEST(same_bits(dx1, dx2));
    BOOST_TEST(same_bits(dgain1, dgain2));
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(fused_qk_norm_and_rope_give_the_separate_calls_bits_on_bf16_storage) {
  auto ops = make_cpu_ops<float>();
  fused_qk_calls_give_the_separate_calls_bits(*ops->bf16_storage(),
                                              [](float v) { return to_bfloat16(v); });
}

BOOST_AUTO_TEST_CASE(fused_qk_norm_and_rope_give_the_separate_calls_bits_on_same_type_storage) {
  auto ops = make_cpu_ops<double>();
  SameTypeStorageOps<double> s(*ops);
  fused_qk_calls_give_the_separate_calls_bits(s, [](float v) { return double(v); });
}
