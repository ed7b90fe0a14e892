// The tuned bf16 storage kernels against the kernels they replace (issue 22, levers 2 and 3):
//  * the packed element-wise kernels (ops/cuda/packed_access.cuh: convert, axpby, SwiGLU, RoPE,
//    16 bytes per access where aligned) against their one-value-per-thread twins (*_scalar),
//    bit for bit, in bf16 and fp32, on aligned tensors, tensors all misaligned alike (the head
//    peeled), tensors misaligned differently (the one-value kernel) and counts that leave a tail
//    (1, 7, 13, 3001, 65541);
//  * RoPE on q and k in one launch against two single-tensor launches, bit for bit;
//  * the QK-norm of one warp per row (ops/cuda/qk_norm.hpp) against rmsnorm<bf16, bf16>'s
//    256-thread block per row: y, rstd bit for bit; dgain within 1e-6 and dx within 8e-3
//    norm-wise (one bf16 rounding of the largest value: the compiler may contract
//    r·(ĝ − x̂·s) differently in the two kernels), with the count of differing values printed;
//  * QK-norm + RoPE fused against rmsnorm then rope_apply_scalar (forward: y, the unrotated norm
//    and rstd bit for bit) and rope_apply_scalar back, axpby_scalar of the further gradient,
//    rmsnorm_backward (backward: as the QK-norm);
//  * the CUDA bf16 storage's rope_qk, qk_norm_rope_forward and _backward against its separate
//    calls, at head dim 64 and at 320 (wider than a warp's row: the default composition).
// Head dims: the suites' 40, 50, 56, 60, 64, 70, 76 and 128. Without a GPU every case prints
// "no GPU: skipped".
#define BOOST_TEST_MODULE cuda_packed_kernels
#define BOOST_TEST_DYN_LINK
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <limits>
#include <memory>
#include <type_traits>

#include "core/bfloat16.hpp"
#include "gpu/gpu_support.hpp"
#include "ops/cuda/cuda_ops.hpp"
#include "ops/cuda/qk_norm.hpp"
#include "ops/cuda/rmsnorm.hpp"
#include "ops/cuda/rope.hpp"
#include "ops/cuda/swiglu.hpp"

using namespace db;
using namespace db::test;
using cuda::bf16;
using cuda::DeviceBuffer;
using Vec = std::vector<float>;
using ElementTypes = boost::mpl::list<float, bf16>;

namespace {

const int kHeadDims[] = {40, 50, 56, 60, 64, 70, 76, 128};
// Counts that leave no tail, a tail, or only a tail.
const int64_t kCounts[] = {1, 7, 13, 64, 3001, 65541};
// Element offsets into the allocations: 0 aligned; 1 and 3 off the 16-byte alignment (with
// every tensor at the same offset, the head before the first pack boundary done one value per
// thread); 8 aligned again (16 bytes of bf16, 32 of fp32).
const size_t kOffsets[] = {0, 1, 3, 8};

float to_float_value(float v) {
  return v;
}
float to_float_value(bf16 v) {
  return __bfloat162float(v);
}
template <class T>
T from_float_value(float v) {
  if constexpr (std::is_same_v<T, float>)
    return v;
  else
    return __float2bfloat16(v);  // nearest even, as the kernels round
}

// A device tensor of T starting `offset` elements into its allocation, filled from floats
// rounded to T on the host (no kernel under test involved).
template <class T>
struct Tensor {
  DeviceBuffer<T> buffer;
  size_t offset = 0;
  Tensor(const Vec& values, size_t offset_) : offset(offset_) {
    std::vector<T> host(values.size() + offset_);
    for (size_t i = 0; i < values.size(); ++i) host[offset_ + i] = from_float_value<T>(values[i]);
    buffer.upload(host);
  }
  T* data() { return buffer.data() + offset; }
  // The bits of the whole allocation (what lies around the tensor included).
  std::vector<uint8_t> bits() const {
    const std::vector<T> host = buffer.download();
    std::vector<uint8_t> out(host.size() * sizeof(T));
    std::memcpy(out.data(), host.data(), out.size());
    return out;
  }
  Vec values() const {
    const std::vector<T> host = buffer.download();
    Vec out(host.size() - offset);
    for (size_t i = 0; i < out.size(); ++i) out[i] = to_float_value(host[offset + i]);
    return out;
  }
};

template <class T>
bool same_bits(const char* what, const Tensor<T>& packed, const Tensor<T>& scalar) {
  const bool same = packed.bits() == scalar.bits();
  if (!same) std::printf("  %s: bits differ\n", what);
  return same;
}

// Norm-wise error within the bound, and how many values differ at all.
bool close_counting(const char* what, const Vec& fast, const Vec& reference, double bound) {
  size_t differing = 0;
  for (size_t i = 0; i < fast.size(); ++i)
    differing += std::memcmp(&fast[i], &reference[i], sizeof(float)) != 0;
  std::printf("  %-40s %zu of %zu values differ\n", what, differing, fast.size());
  return within(what, relative_error(fast, reference), bound);
}

constexpr double kDxTolerance = 8e-3;     // one bf16 rounding of the largest value
constexpr double kDgainTolerance = 1e-6;  // fp32 sums, contraction aside in the same order

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(packed_swiglu_gives_the_one_value_kernels_bits, T, ElementTypes) {
  DB_REQUIRE_GPU();
  uint64_t seed = 1;
  for (int64_t n : kCounts)
    for (size_t offset : kOffsets) {
      const Vec a = random_floats(n, seed++, 4.0), b = random_floats(n, seed++),
                dh = random_floats(n, seed++);
      Tensor<T> ta(a, offset), tb(b, offset), tdh(dh, offset);
      Tensor<T> h1(Vec(n, 0.f), offset), h2(Vec(n, 0.f), offset);
      cuda::swiglu_forward(h1.data(), ta.data(), tb.data(), n);
      cuda::swiglu_forward_scalar(h2.data(), ta.data(), tb.data(), n);
      BOOST_TEST(same_bits("swiglu h", h1, h2), "n = " << n << ", offset " << offset);
      Tensor<T> da1(Vec(n, 0.f), offset), da2(Vec(n, 0.f), offset), db1(Vec(n, 0.f), offset),
          db2(Vec(n, 0.f), offset);
      cuda::swiglu_backward(da1.data(), db1.data(), tdh.data(), ta.data(), tb.data(), n);
      cuda::swiglu_backward_scalar(da2.data(), db2.data(), tdh.data(), ta.data(), tb.data(), n);
      BOOST_TEST(same_bits("swiglu da", da1, da2), "n = " << n << ", offset " << offset);
      BOOST_TEST(same_bits("swiglu db", db1, db2), "n = " << n << ", offset " << offset);
    }
  // One operand off alignment, the others aligned: the one-value kernel, still the same bits.
  const int64_t n = 3001;
  Tensor<T> a(random_floats(n, 90), 0), b(random_floats(n, 91), 1), h1(Vec(n, 0.f), 0),
      h2(Vec(n, 0.f), 0);
  cuda::swiglu_forward(h1.data(), a.data(), b.data(), n);
  cuda::swiglu_forward_scalar(h2.data(), a.data(), b.data(), n);
  BOOST_TEST(same_bits("swiglu h, mixed alignment", h1, h2));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(packed_axpby_gives_the_one_value_kernels_bits_in_every_case, T,
                              ElementTypes) {
  DB_REQUIRE_GPU();
  struct Case {
    float a, b;
  };
  uint64_t seed = 100;
  for (const Case c : {Case{0.75f, 0.f}, Case{1.f, 1.f}, Case{-1.25f, 0.5f}})
    for (int64_t n : kCounts)
      for (size_t offset : kOffsets) {
        const Vec x = random_floats(n, seed++);
        // b = 0 must not read y: it starts NaN.
        const Vec y =
            c.b == 0.f ? Vec(n, std::numeric_limits<float>::quiet_NaN()) : random_floats(n, seed++);
        Tensor<T> tx(x, offset), y1(y, offset), y2(y, offset);
        cuda::axpby(y1.data(), c.a, tx.data(), c.b, n);
        cuda::axpby_scalar(y2.data(), c.a, tx.data(), c.b, n);
        BOOST_TEST(same_bits("axpby", y1, y2),
                   "a = " << c.a << ", b = " << c.b << ", n = " << n << ", offset " << offset);
        // y = b·y + a·y in place (x = y), as stream_readout.hpp calls it.
        Tensor<T> z1(x, offset), z2(x, offset);
        cuda::axpby(z1.data(), c.a, z1.data(), c.b, n);
        cuda::axpby_scalar(z2.data(), c.a, z2.data(), c.b, n);
        BOOST_TEST(same_bits("axpby in place", z1, z2), "n = " << n << ", offset " << offset);
      }
}

// Operands misaligned by different amounts: no head aligns both, so the one-value kernel runs.
BOOST_AUTO_TEST_CASE_TEMPLATE(
    axpby_on_operands_misaligned_differently_gives_the_one_value_kernels_bits, T, ElementTypes) {
  DB_REQUIRE_GPU();
  const int64_t n = 3001;
  const Vec y = random_floats(n, 190), x = random_floats(n, 191);
  Tensor<T> tx(x, 3), y1(y, 1), y2(y, 1);
  cuda::axpby(y1.data(), 0.5f, tx.data(), 1.f, n);
  cuda::axpby_scalar(y2.data(), 0.5f, tx.data(), 1.f, n);
  BOOST_TEST(same_bits("axpby, mixed alignment", y1, y2));
}

BOOST_AUTO_TEST_CASE(packed_conversions_give_the_one_value_kernels_bits) {
  DB_REQUIRE_GPU();
  uint64_t seed = 200;
  for (int64_t n : kCounts)
    for (size_t offset : kOffsets) {
      Vec values = random_floats(n, seed++, 100.0);
      values[0] = std::numeric_limits<float>::max();  // rounds to inf
      Tensor<float> wide(values, offset);
      Tensor<bf16> narrow1(Vec(n, 0.f), offset), narrow2(Vec(n, 0.f), offset);
      cuda::convert(narrow1.data(), wide.data(), n);
      cuda::convert_scalar(narrow2.data(), wide.data(), n);
      BOOST_TEST(same_bits("fp32 → bf16", narrow1, narrow2), "n = " << n << ", offset " << offset);
      Tensor<float> back1(Vec(n, 0.f), offset), back2(Vec(n, 0.f), offset);
      cuda::convert(back1.data(), narrow1.data(), n);
      cuda::convert_scalar(back2.data(), narrow1.data(), n);
      BOOST_TEST(same_bits("bf16 → fp32", back1, back2), "n = " << n << ", offset " << offset);
      Tensor<bf16> copy1(Vec(n, 0.f), offset), copy2(Vec(n, 0.f), offset);
      cuda::convert(copy1.data(), narrow1.data(), n);
      cuda::convert_scalar(copy2.data(), narrow1.data(), n);
      BOOST_TEST(same_bits("bf16 → bf16", copy1, copy2), "n = " << n << ", offset " << offset);
      Tensor<float> fcopy1(Vec(n, 0.f), offset), fcopy2(Vec(n, 0.f), offset);
      cuda::convert(fcopy1.data(), wide.data(), n);
      cuda::convert_scalar(fcopy2.data(), wide.data(), n);
      BOOST_TEST(same_bits("fp32 → fp32", fcopy1, fcopy2), "n = " << n << ", offset " << offset);
    }
  // Misaligned source, aligned destination.
  const int64_t n = 3001;
  Tensor<float> wide(random_floats(n, 290), 1);
  Tensor<bf16> narrow1(Vec(n, 0.f), 0), narrow2(Vec(n, 0.f), 0);
  cuda::convert(narrow1.data(), wide.data(), n);
  cuda::convert_scalar(narrow2.data(), wide.data(), n);
  BOOST_TEST(same_bits("fp32 → bf16, mixed alignment", narrow1, narrow2));
}

BOOST_AUTO_TEST_CASE_TEMPLATE(packed_rope_and_rope_on_q_and_k_give_the_one_pair_kernels_bits, T,
                              ElementTypes) {
  DB_REQUIRE_GPU();
  const int64_t batch = 2;
  const int seq_len = 37, heads = 4, kv_heads = 2;
  uint64_t seed = 300;
  for (int hd : kHeadDims) {
    std::printf(" rope hd=%d\n", hd);
    const cuda::RopeTable table(seq_len, hd, 10000.0);
    const int64_t nq = batch * seq_len * heads * hd, nk = batch * seq_len * kv_heads * hd;
    for (bool inverse : {false, true})
      for (size_t offset : kOffsets) {
        const Vec q = random_floats(nq, seed++), k = random_floats(nk, seed++);
        Tensor<T> q1(q, offset), q2(q, offset), q3(q, offset), k1(k, offset), k3(k, offset);
        cuda::rope_apply(q1.data(), table, batch, seq_len, heads, inverse);
        cuda::rope_apply_scalar(q2.data(), table, batch, seq_len, heads, inverse);
        BOOST_TEST(same_bits("rope", q1, q2),
                   "hd " << hd << ", inverse " << inverse << ", offset " << offset);
        cuda::rope_apply_qk(q3.data(), heads, k3.data(), kv_heads, table, batch, seq_len, inverse);
        cuda::rope_apply_scalar(k1.data(), table, batch, seq_len, kv_heads, inverse);
        BOOST_TEST(same_bits("rope q of q and k", q3, q2), "hd " << hd << ", offset " << offset);
        BOOST_TEST(same_bits("rope k of q and k", k3, k1), "hd " << hd << ", offset " << offset);
      }
  }
}

BOOST_AUTO_TEST_CASE(qk_norm_by_warps_matches_the_block_kernel) {
  DB_REQUIRE_GPU();
  uint64_t seed = 400;
  const int64_t rows = 2 * 37 * 3;  // several blocks of either kernel, the last one partial
  for (int hd : kHeadDims)
    for (bool with_gain : {true, false})
      for (bool accumulate : {false, true}) {
        std::printf(" qk_norm hd=%d%s%s\n", hd, with_gain ? "" : " (no gain)",
                    accumulate ? " (dx added)" : "");
        const int64_t n = rows * hd;
        Vec gain = random_floats(hd, seed++, 0.2);
        for (float& g : gain) g += 1.f;
        Tensor<float> g(gain, 0), rstd1(Vec(rows, 0.f), 0), rstd2(Vec(rows, 0.f), 0);
        const float* g_or_null = with_gain ? g.data() : nullptr;
        Tensor<bf16> x(random_floats(n, seed++, 3.0), 0), y1(Vec(n, 0.f), 0), y2(Vec(n, 0.f), 0);
        cuda::qk_norm_forward(y1.data(), rstd1.data(), x.data(), g_or_null, rows, hd, 1e-6);
        cuda::rmsnorm_forward(y2.data(), rstd2.data(), x.data(), g_or_null, rows, hd, 1e-6);
        BOOST_TEST(same_bits("qk_norm y", y1, y2), "hd " << hd);
        BOOST_TEST(same_bits("qk_norm rstd", rstd1, rstd2), "hd " << hd);

        const Vec dx_start = random_floats(n, seed++);
        Tensor<bf16> dy(random_floats(n, seed++), 0), dx1(dx_start, 0), dx2(dx_start, 0);
        const Vec dgain_start = random_floats(hd, seed++);
        Tensor<float> dg1(dgain_start, 0), dg2(dgain_start, 0);
        float* dg1_or_null = with_gain ? dg1.data() : nullptr;
        float* dg2_or_null = with_gain ? dg2.data() : nullptr;
        cuda::qk_norm_backward(dx1.data(), dg1_or_null, dy.data(), x.data(), g_or_null,
                               rstd2.data(), rows, hd, accumulate);
        cuda::rmsnorm_backward(dx2.data(), dg2_or_null, dy.data(), x.data(), g_or_null,
                               rstd2.data(), rows, hd, accumulate);
        BOOST_TEST(close_counting("qk_norm dx", dx1.values(), dx2.values(), kDxTolerance));
        BOOST_TEST(close_counting("qk_norm dgain", dg1.values(), dg2.values(), kDgainTolerance));
      }
}

BOOST_AUTO_TEST_CASE(qk_norm_and_rope_in_one_pass_match_the_separate_kernels) {
  DB_REQUIRE_GPU();
  uint64_t seed = 500;
  const int64_t batch = 2;
  const int seq_len = 37, heads = 3;
  const int64_t rows = batch * seq_len * heads;
  for (int hd : kHeadDims) {
    std::printf(" qk_norm + rope hd=%d\n", hd);
    const int64_t n = rows * hd;
    const cuda::RopeTable table(seq_len, hd, 10000.0);
    Vec gain = random_floats(hd, seed++, 0.2);
    for (float& g : gain) g += 1.f;
    Tensor<float> g(gain, 0), rstd1(Vec(rows, 0.f), 0), rstd2(Vec(rows, 0.f), 0);
    Tensor<bf16> x(random_floats(n, seed++, 3.0), 0);
    Tensor<bf16> y1(Vec(n, 0.f), 0), y2(Vec(n, 0.f), 0), unrotated1(Vec(n, 0.f), 0);
    cuda::qk_norm_rope_forward(y1.data(), unrotated1.data(), rstd1.data(), x.data(), g.data(),
                               table, batch, seq_len, heads, 1e-6);
    cuda::rmsnorm_forward(y2.data(), rstd2.data(), x.data(), g.data(), rows, hd, 1e-6);
    BOOST_TEST(same_bits("unrotated norm", unrotated1, y2), "hd " << hd);
    cuda::rope_apply_scalar(y2.data(), table, batch, seq_len, heads, false);
    BOOST_TEST(same_bits("rotated norm", y1, y2), "hd " << hd);
    BOOST_TEST(same_bits("rstd", rstd1, rstd2), "hd " << hd);
    Tensor<bf16> y3(Vec(n, 0.f), 0);  // without the unrotated output
    cuda::qk_norm_rope_forward(y3.data(), nullptr, rstd1.data(), x.data(), g.data(), table, batch,
                               seq_len, heads, 1e-6);
    BOOST_TEST(same_bits("rotated norm (no unrotated output)", y3, y2), "hd " << hd);

    for (bool with_extra : {false, true}) {
      const Vec dy_values = random_floats(n, seed++);
      Tensor<bf16> dy1(dy_values, 0), dy2(dy_values, 0), extra(random_floats(n, seed++), 0);
      Tensor<bf16> dx1(Vec(n, 0.f), 0), dx2(Vec(n, 0.f), 0);
      const Vec dgain_start = random_floats(hd, seed++);
      Tensor<float> dg1(dgain_start, 0), dg2(dgain_start, 0);
      cuda::qk_norm_rope_backward(dx1.data(), dg1.data(), dy1.data(),
                                  with_extra ? extra.data() : nullptr, x.data(), g.data(),
                                  rstd2.data(), table, batch, seq_len, heads);
      BOOST_TEST(same_bits("dy left unchanged", dy1, Tensor<bf16>(dy_values, 0)));
      cuda::rope_apply_scalar(dy2.data(), table, batch, seq_len, heads, true);
      if (with_extra) cuda::axpby_scalar(dy2.data(), 1.f, extra.data(), 1.f, n);
      cuda::rmsnorm_backward(dx2.data(), dg2.data(), dy2.data(), x.data(), g.data(), rstd2.data(),
                             rows, hd, false);
      BOOST_TEST(close_counting(with_extra ? "dx (further gradient added)" : "dx", dx1.values(),
                                dx2.values(), kDxTolerance));
      BOOST_TEST(close_counting("dgain", dg1.values(), dg2.values(), kDgainTolerance));
    }
  }
}

BOOST_AUTO_TEST_CASE(the_bf16_storage_fused_calls_match_its_separate_calls) {
  DB_REQUIRE_GPU();
  OpsOptions options;
  options.precision = Precision::bf16;
  const std::unique_ptr<Ops<float>> ops = cuda::make_cuda_ops(options);
  StorageOps<float, bfloat16>& s = *ops->bf16_storage();
  const int64_t batch = 2;
  const int seq_len = 21, heads = 4, kv_heads = 2;
  const double theta = 10000.0, eps = 1e-6;
  uint64_t seed = 600;
  auto as_storage = [](Tensor<bf16>& t) { return reinterpret_cast<bfloat16*>(t.data()); };
  for (int hd : {64, 320}) {  // 320: wider than the warp kernels take
    std::printf(" bf16 storage hd=%d\n", hd);
    const int64_t rows = batch * seq_len * heads, n = rows * hd,
                  nk = batch * seq_len * kv_heads * hd;
    const Vec q = random_floats(n, seed++), k = random_floats(nk, seed++);
    Tensor<bf16> q1(q, 0), q2(q, 0), k1(k, 0), k2(k, 0);
    s.rope_qk(as_storage(q1), heads, as_storage(k1), kv_heads, batch, seq_len, hd, theta, false);
    s.rope(as_storage(q2), batch, seq_len, heads, hd, theta, false);
    s.rope(as_storage(k2), batch, seq_len, kv_heads, hd, theta, false);
    BOOST_TEST(same_bits("rope_qk q", q1, q2));
    BOOST_TEST(same_bits("rope_qk k", k1, k2));

    Vec gain = random_floats(hd, seed++, 0.2);
    for (float& g : gain) g += 1.f;
    Tensor<float> g(gain, 0), rstd1(Vec(rows, 0.f), 0), rstd2(Vec(rows, 0.f), 0);
    Tensor<bf16> x(random_floats(n, seed++, 3.0), 0), y1(Vec(n, 0.f), 0), y2(Vec(n, 0.f), 0),
        unrotated1(Vec(n, 0.f), 0), unrotated2(Vec(n, 0.f), 0);
    s.qk_norm_rope_forward(as_storage(y1), rstd1.data(), as_storage(unrotated1), as_storage(x),
                           g.data(), batch, seq_len, heads, hd, eps, theta);
    s.rmsnorm_forward(as_storage(y2), rstd2.data(), as_storage(x), g.data(), rows, hd, eps);
    s.copy(as_storage(unrotated2), as_storage(y2), n);
    s.rope(as_storage(y2), batch, seq_len, heads, hd, theta, false);
    BOOST_TEST(same_bits("qk_norm_rope_forward y", y1, y2));
    BOOST_TEST(same_bits("qk_norm_rope_forward y_unrotated", unrotated1, unrotated2));
    BOOST_TEST(same_bits("qk_norm_rope_forward rstd", rstd1, rstd2));

    const Vec dy = random_floats(n, seed++);
    Tensor<bf16> dy1(dy, 0), dy2(dy, 0), extra(random_floats(n, seed++), 0), dx1(Vec(n, 0.f), 0),
        dx2(Vec(n, 0.f), 0);
    Tensor<float> dg1(Vec(hd, 0.5f), 0), dg2(Vec(hd, 0.5f), 0);
    s.qk_norm_rope_backward(as_storage(dx1), dg1.data(), as_storage(dy1), as_storage(extra),
                            as_storage(x), g.data(), rstd2.data(), batch, seq_len, heads, hd,
                            theta);
    s.rope(as_storage(dy2), batch, seq_len, heads, hd, theta, true);
    s.axpby(as_storage(dy2), 1.f, as_storage(extra), 1.f, n);
    s.rmsnorm_backward(as_storage(dx2), dg2.data(), as_storage(dy2), as_storage(x), g.data(),
                       rstd2.data(), rows, hd, false);
    BOOST_TEST(
        close_counting("qk_norm_rope_backward dx", dx1.values(), dx2.values(), kDxTolerance));
    BOOST_TEST(
        close_counting("qk_norm_rope_backward dgain", dg1.values(), dg2.values(), kDgainTolerance));
  }
}
