// bf16 activation storage on the GPU (ops/cuda/cuda_bf16_storage.hpp) against the CPU's (the
// widening implementation, ops/storage_ops_widening.hpp): every StorageOps<float, bfloat16>
// method of the CUDA ops' bf16_storage() against make_cpu_ops<float>()->bf16_storage() on fresh
// random inputs — products into bf16 and into fp32 with and without accumulate_dx, the QK
// RMSNorm, RoPE, SwiGLU, the copies and axpby, attention and MoDA on every attention path
// (auto, flash, reference; fp32 precision, which widens) with grouped-query heads and head dims
// that cuDNN pads (50, 76: not multiples of 8) or not (40, 64) — and the whole sequence run
// twice, bit for bit.
//
// Results are compared after widening (gpu_support.hpp's norm-wise error). Bounds (doc/cuda.md
// "Tolerances"): bf16 outputs 1.6e-2 (both backends compute in fp32 on the same bf16 values and
// round once, the fast attention also rounds P and dS); fp32 outputs of bf16 products (dW, the
// "_wide" outputs), norm statistics and dgain 1e-5; lse 1e-4 (fast exp2 in the fused kernels);
// the conversions and copies bit for bit. Without a GPU each case prints "no GPU: skipped".
#define BOOST_TEST_MODULE cuda_bf16_storage
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "core/bfloat16.hpp"
#include "gpu/gpu_support.hpp"
#include "ops/cpu/cpu_ops.hpp"
#include "ops/cuda/cuda_ops.hpp"

using namespace db;
using namespace db::test;
using Vec = std::vector<float>;
using Bits = std::vector<uint16_t>;
using cuda::DeviceBuffer;

namespace {

constexpr double kLseTolerance = 1e-4;

OpsOptions options(Precision precision, AttentionPath attention) {
  OpsOptions o;
  o.precision = precision;
  o.attention = attention;
  return o;
}

Bits bits_of(const std::vector<bfloat16>& v) {
  Bits out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i].bits;
  return out;
}

// A bf16 tensor of both backends: the CPU's host values and the GPU's device twin, equal at
// start (start rounded to bf16). The ops see it from element `offset` on (an address off the
// 16-byte alignment of the allocation when offset is odd).
struct Bf16Pair {
  std::vector<bfloat16> host;
  DeviceBuffer<cuda::bf16> device;
  size_t offset = 0;
  explicit Bf16Pair(const Vec& start, size_t offset_ = 0)
      : host(start.size()), device(start.size()), offset(offset_) {
    for (size_t i = 0; i < start.size(); ++i) host[i] = to_bfloat16(start[i]);
    upload(host);
  }
  void upload(const std::vector<bfloat16>& values) {
    static_assert(sizeof(bfloat16) == sizeof(cuda::bf16));
    device.upload(reinterpret_cast<const cuda::bf16*>(values.data()), values.size());
  }
  bfloat16* cpu() { return host.data() + offset; }
  bfloat16* gpu() { return reinterpret_cast<bfloat16*>(device.data()) + offset; }
  std::vector<bfloat16> gpu_raw() const {
    const std::vector<cuda::bf16> raw = device.download();
    std::vector<bfloat16> out(raw.size());
    std::memcpy(out.data(), raw.data(), raw.size() * sizeof(bfloat16));
    return out;
  }
  static Vec widened(const std::vector<bfloat16>& v) {
    Vec out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = to_float(v[i]);
    return out;
  }
  Vec cpu_values() const { return widened(host); }
  Vec gpu_values() const { return widened(gpu_raw()); }
};

// Both backends' bf16 storage, a seed counter (every input fresh) and the bits of every GPU
// result checked, in order, for the second run.
struct Storage {
  std::unique_ptr<Ops<float>> cpu_ops = make_cpu_ops<float>();
  std::unique_ptr<Ops<float>> gpu_ops;
  StorageOps<float, bfloat16>& cpu;
  StorageOps<float, bfloat16>& gpu;
  uint64_t seed = 500;
  std::vector<std::vector<uint32_t>> results;

  explicit Storage(const OpsOptions& o = options(Precision::bf16, AttentionPath::automatic))
      : gpu_ops(cuda::make_cuda_ops(o)),
        cpu(*cpu_ops->bf16_storage()),
        gpu(*gpu_ops->bf16_storage()) {}
  Vec random(size_t n, double scale = 1.0) { return random_floats(n, seed++, scale); }

  void check(const char* what, const Bf16Pair& p, double bound) {
    const std::vector<bfloat16> raw = p.gpu_raw();
    BOOST_TEST(within(what, relative_error(Bf16Pair::widened(raw), p.cpu_values()), bound));
    results.emplace_back(raw.size());
    for (size_t i = 0; i < raw.size(); ++i) results.back()[i] = raw[i].bits;
  }
  void check(const char* what, const Pair& p, double bound) {
    const Vec gpu_values = p.gpu_values();
    BOOST_TEST(within(what, relative_error(gpu_values, p.host), bound));
    results.emplace_back(gpu_values.size());
    std::memcpy(results.back().data(), gpu_values.data(), gpu_values.size() * sizeof(float));
  }
  // Bit for bit (conversions and copies).
  void check_bits(const char* what, const Bf16Pair& p) {
    const Bits gpu_bits = bits_of(p.gpu_raw()), cpu_bits = bits_of(p.host);
    BOOST_TEST((gpu_bits == cpu_bits), what << ": GPU bits differ from the CPU's");
    results.emplace_back(gpu_bits.begin(), gpu_bits.end());
  }
};

// --- the cases; each appends its GPU results to st.results ---

void narrow_and_widen(Storage& st) {
  // Random values, ties at the rounding point (to even, both ways), the largest float (rounds
  // to inf), ±inf, ±0, subnormals; NaN apart (CUDA's canonical NaN bits may differ).
  Vec values = st.random(1000, 10.0);
  const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0xff7fffffu,
                              0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u,
                              0x00000001u, 0x807fffffu, 0x3f80ffffu, 0x477fe000u};
  for (uint32_t u : special) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    values.push_back(f);
  }
  const size_t n = values.size();
  Pair src(values);
  Bf16Pair narrow(Vec(n, 0.f));
  st.cpu.narrow(narrow.cpu(), src.cpu(), int64_t(n));
  st.gpu.narrow(narrow.gpu(), src.gpu(), int64_t(n));
  st.check_bits("narrow (round to nearest even)", narrow);
  Pair wide(Vec(n, 0.f));
  st.cpu.widen(wide.cpu(), narrow.cpu(), int64_t(n));
  st.gpu.widen(wide.gpu(), narrow.gpu(), int64_t(n));
  const Vec widened = wide.gpu_values();  // exact, infinities included: compared as bits
  BOOST_TEST(std::memcmp(widened.data(), wide.host.data(), n * sizeof(float)) == 0);

  const Vec nan{std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN()};
  Pair nan_src(nan);
  Bf16Pair nan_out(Vec(2, 0.f));
  st.gpu.narrow(nan_out.gpu(), nan_src.gpu(), 2);
  for (float x : nan_out.gpu_values()) BOOST_TEST(std::isnan(x));
}

void linear(Storage& st, int64_t rows, int in, int out) {
  std::printf(" linear rows=%lld in=%d out=%d\n", (long long)rows, in, out);
  Bf16Pair x(st.random(rows * in)), W(st.random(int64_t(out) * in, 0.2)), dy(st.random(rows * out)),
      y(Vec(rows * out, 0.f));
  st.cpu.linear_forward(y.cpu(), x.cpu(), W.cpu(), rows, in, out);
  st.gpu.linear_forward(y.gpu(), x.gpu(), W.gpu(), rows, in, out);
  st.check("y = x·Wᵀ (bf16)", y, kBf16Tolerance);
  Pair y_wide(Vec(rows * out, 0.f));
  st.cpu.linear_forward_wide(y_wide.cpu(), x.cpu(), W.cpu(), rows, in, out);
  st.gpu.linear_forward_wide(y_wide.gpu(), x.gpu(), W.gpu(), rows, in, out);
  st.check("y = x·Wᵀ (fp32, _wide)", y_wide, kFp32Tolerance);

  for (bool accumulate : {false, true}) {
    // dx starts random: overwritten, or added to; dW always added to.
    Bf16Pair dx(st.random(rows * in));
    Pair dW(st.random(int64_t(out) * in));
    st.cpu.linear_backward(dx.cpu(), dW.cpu(), dy.cpu(), x.cpu(), W.cpu(), rows, in, out,
                           accumulate);
    st.gpu.linear_backward(dx.gpu(), dW.gpu(), dy.gpu(), x.gpu(), W.gpu(), rows, in, out,
                           accumulate);
    st.check(accumulate ? "dx += dy·W (bf16)" : "dx = dy·W (bf16)", dx, kBf16Tolerance);
    st.check("dW += dyᵀ·x (fp32)", dW, kFp32Tolerance);
    Pair dx_wide(st.random(rows * in));
    Pair dW2(st.random(int64_t(out) * in));
    st.cpu.linear_backward_wide(dx_wide.cpu(), dW2.cpu(), dy.cpu(), x.cpu(), W.cpu(), rows, in, out,
                                accumulate);
    st.gpu.linear_backward_wide(dx_wide.gpu(), dW2.gpu(), dy.gpu(), x.gpu(), W.gpu(), rows, in, out,
                                accumulate);
    st.check(accumulate ? "dx += dy·W (fp32, _wide)" : "dx = dy·W (fp32, _wide)", dx_wide,
             kFp32Tolerance);
    st.check("dW += dyᵀ·x (with _wide)", dW2, kFp32Tolerance);
  }
}

void rmsnorm(Storage& st, int64_t rows, int width) {
  std::printf(" rmsnorm rows=%lld width=%d\n", (long long)rows, width);
  Bf16Pair x(st.random(rows * width, 3.0)), y(Vec(rows * width, 0.f));
  Pair gain(st.random(width, 0.1)), rstd(Vec(rows, 0.f));
  for (float& g : gain.host) g += 1.f;
  gain.device.upload(gain.host);
  st.cpu.rmsnorm_forward(y.cpu(), rstd.cpu(), x.cpu(), gain.cpu(), rows, width, 1e-6);
  st.gpu.rmsnorm_forward(y.gpu(), rstd.gpu(), x.gpu(), gain.gpu(), rows, width, 1e-6);
  st.check("rmsnorm y", y, kBf16Tolerance);
  st.check("rmsnorm rstd", rstd, kFp32Tolerance);
  Bf16Pair dy(st.random(rows * width));
  for (bool accumulate : {false, true}) {
    Bf16Pair dx(st.random(rows * width));
    Pair dgain(st.random(width));
    st.cpu.rmsnorm_backward(dx.cpu(), dgain.cpu(), dy.cpu(), x.cpu(), gain.cpu(), rstd.cpu(), rows,
                            width, accumulate);
    st.gpu.rmsnorm_backward(dx.gpu(), dgain.gpu(), dy.gpu(), x.gpu(), gain.gpu(), rstd.gpu(), rows,
                            width, accumulate);
    st.check(accumulate ? "rmsnorm dx (added)" : "rmsnorm dx", dx, kBf16Tolerance);
    st.check("rmsnorm dgain (added)", dgain, kFp32Tolerance);
  }
}

// The second, shorter sequence reads the table the ops object built for the first.
void rope(Storage& st, int head_dim) {
  const int64_t batch = 2;
  const int heads = 3;
  for (const int seq_len : {9, 4}) {
    std::printf(" rope hd=%d T=%d\n", head_dim, seq_len);
    Bf16Pair x(st.random(batch * seq_len * heads * head_dim));
    for (bool inverse : {false, true}) {
      st.cpu.rope(x.cpu(), batch, seq_len, heads, head_dim, 10000.0, inverse);
      st.gpu.rope(x.gpu(), batch, seq_len, heads, head_dim, 10000.0, inverse);
      st.check(inverse ? "rope inverse" : "rope", x, kBf16Tolerance);
      x.upload(x.host);  // the next direction starts from the same values on both sides
    }
  }
}

void swiglu(Storage& st) {
  const int64_t n = 3001;
  Bf16Pair a(st.random(n, 2.0)), b(st.random(n)), h(Vec(n, 0.f)), dh(st.random(n));
  st.cpu.swiglu_forward(h.cpu(), a.cpu(), b.cpu(), n);
  st.gpu.swiglu_forward(h.gpu(), a.gpu(), b.gpu(), n);
  st.check("swiglu h", h, kBf16Tolerance);
  Bf16Pair da(st.random(n)), db(st.random(n));
  st.cpu.swiglu_backward(da.cpu(), db.cpu(), dh.cpu(), a.cpu(), b.cpu(), n);
  st.gpu.swiglu_backward(da.gpu(), db.gpu(), dh.gpu(), a.gpu(), b.gpu(), n);
  st.check("swiglu da", da, kBf16Tolerance);
  st.check("swiglu db", db, kBf16Tolerance);
}

void copies_and_axpby(Storage& st) {
  const int64_t n = 777;
  Bf16Pair src(st.random(n)), dst(st.random(n));
  st.cpu.copy(dst.cpu(), src.cpu(), n);
  st.gpu.copy(dst.gpu(), src.gpu(), n);
  st.check_bits("copy", dst);
  // Rows of 40 from a stride of 56 into a stride of 48: what lies between the rows stays.
  const int64_t rows = 11;
  Bf16Pair rows_src(st.random(rows * 56)), rows_dst(st.random(rows * 48));
  st.cpu.copy_rows(rows_dst.cpu(), 48, rows_src.cpu(), 56, rows, 40);
  st.gpu.copy_rows(rows_dst.gpu(), 48, rows_src.gpu(), 56, rows, 40);
  st.check_bits("copy_rows", rows_dst);

  struct Case {
    const char* what;
    float a, b;
  };
  for (const Case& c : {Case{"axpby b = 0 (y not read)", 0.75f, 0.f},
                        Case{"axpby a = b = 1", 1.f, 1.f}, Case{"axpby", -1.25f, 0.5f}}) {
    Vec start = st.random(n);
    if (c.b == 0.f) start.assign(n, std::numeric_limits<float>::quiet_NaN());
    Bf16Pair y(start);
    st.cpu.axpby(y.cpu(), c.a, src.cpu(), c.b, n);
    st.gpu.axpby(y.gpu(), c.a, src.gpu(), c.b, n);
    st.check(c.what, y, kBf16Tolerance);
  }
}

// offset: the bf16 tensors start that many elements into their allocations (1: not 16-byte
// aligned, which cuDNN needs: the path copies them).
void attention(Storage& st, const AttentionShape& s, size_t offset = 0) {
  std::printf(" attention B=%lld T=%d H=%d H_kv=%d hd=%d%s\n", (long long)s.batch, s.seq_len,
              s.heads, s.kv_heads, s.head_dim, offset ? " (tensors off 16-byte alignment)" : "");
  const int64_t rows = s.batch * s.seq_len;
  const size_t nq = rows * s.heads * s.head_dim + offset,
               nkv = rows * s.kv_heads * s.head_dim + offset;
  Bf16Pair q(st.random(nq), offset), k(st.random(nkv), offset), v(st.random(nkv), offset),
      o(Vec(nq, 0.f), offset);
  Pair lse(Vec(rows * s.heads, 0.f));
  st.cpu.attention_forward(o.cpu(), lse.cpu(), q.cpu(), k.cpu(), v.cpu(), s);
  st.gpu.attention_forward(o.gpu(), lse.gpu(), q.gpu(), k.gpu(), v.gpu(), s);
  st.check("o", o, kBf16Tolerance);
  st.check("lse", lse, kLseTolerance);
  // The backward of both from the CPU's forward, so that both see the same o and lse.
  o.upload(o.host);
  lse.device.upload(lse.host);
  Bf16Pair d_o(st.random(nq), offset), dq(st.random(nq), offset), dk(st.random(nkv), offset),
      dv(st.random(nkv), offset);
  st.cpu.attention_backward(dq.cpu(), dk.cpu(), dv.cpu(), d_o.cpu(), o.cpu(), lse.cpu(), q.cpu(),
                            k.cpu(), v.cpu(), s);
  st.gpu.attention_backward(dq.gpu(), dk.gpu(), dv.gpu(), d_o.gpu(), o.gpu(), lse.gpu(), q.gpu(),
                            k.gpu(), v.gpu(), s);
  st.check("dq", dq, kBf16Tolerance);
  st.check("dk", dk, kBf16Tolerance);
  st.check("dv", dv, kBf16Tolerance);
}

void moda_attention(Storage& st, const ModaShape& s) {
  std::printf(" moda B=%lld T=%d H=%d H_kv=%d hd=%d depth=%d of %d\n", (long long)s.batch,
              s.seq_len, s.heads, s.kv_heads, s.head_dim, s.depth, s.depth_stride);
  const int64_t rows = s.batch * s.seq_len;
  const size_t nq = rows * s.heads * s.head_dim, nkv = rows * s.kv_heads * s.head_dim;
  const size_t ndepth = nkv * s.depth_stride;
  Bf16Pair q(st.random(nq)), k(st.random(nkv)), v(st.random(nkv)), o(Vec(nq, 0.f));
  Bf16Pair depth_k(st.random(ndepth)), depth_v(st.random(ndepth));
  Pair lse(Vec(rows * s.heads, 0.f));
  st.cpu.moda_attention_forward(o.cpu(), lse.cpu(), q.cpu(), k.cpu(), v.cpu(), depth_k.cpu(),
                                depth_v.cpu(), s);
  st.gpu.moda_attention_forward(o.gpu(), lse.gpu(), q.gpu(), k.gpu(), v.gpu(), depth_k.gpu(),
                                depth_v.gpu(), s);
  st.check("moda o", o, kBf16Tolerance);
  st.check("moda lse", lse, kLseTolerance);
  o.upload(o.host);
  lse.device.upload(lse.host);
  Bf16Pair d_o(st.random(nq)), dq(st.random(nq)), dk(st.random(nkv)), dv(st.random(nkv));
  Bf16Pair d_depth_k(st.random(ndepth)), d_depth_v(st.random(ndepth));  // added to
  st.cpu.moda_attention_backward(dq.cpu(), dk.cpu(), dv.cpu(), d_depth_k.cpu(), d_depth_v.cpu(),
                                 d_o.cpu(), o.cpu(), lse.cpu(), q.cpu(), k.cpu(), v.cpu(),
                                 depth_k.cpu(), depth_v.cpu(), s);
  st.gpu.moda_attention_backward(dq.gpu(), dk.gpu(), dv.gpu(), d_depth_k.gpu(), d_depth_v.gpu(),
                                 d_o.gpu(), o.gpu(), lse.gpu(), q.gpu(), k.gpu(), v.gpu(),
                                 depth_k.gpu(), depth_v.gpu(), s);
  st.check("moda dq", dq, kBf16Tolerance);
  st.check("moda dk", dk, kBf16Tolerance);
  st.check("moda dv", dv, kBf16Tolerance);
  st.check("moda d_depth_k (added)", d_depth_k, kBf16Tolerance);
  st.check("moda d_depth_v (added)", d_depth_v, kBf16Tolerance);
}

// The shapes of the attention cases: plain, GQA, multi-query; head dims cuDNN pads (50, 76) or
// not (40, 64).
const AttentionShape kAttentionShapes[] = {
    {2, 70, 4, 4, 64}, {1, 65, 8, 2, 40}, {1, 33, 4, 1, 50}, {2, 40, 4, 2, 76}};
const AttentionShape kUnalignedShape{1, 40, 4, 2, 64};  // run with its tensors off alignment
const ModaShape kModaShapes[] = {
    {2, 37, 4, 2, 64, 3, 4}, {1, 65, 4, 4, 40, 2, 2}, {1, 20, 8, 2, 50, 1, 3}};

// The attention configurations: the bf16 fast paths (auto picks cuDNN where it runs), the
// reference kernel asked for, and fp32 precision, where auto picks the reference kernel too.
struct AttentionConfig {
  const char* name;
  OpsOptions options;
  const char* expected_path;  // in the report of every shape; null: whatever auto picked
};
const AttentionConfig kAttentionConfigs[] = {
    {"bf16, auto", options(Precision::bf16, AttentionPath::automatic), nullptr},
    {"bf16, flash", options(Precision::bf16, AttentionPath::flash), "flash"},
    {"bf16, reference (widened)", options(Precision::bf16, AttentionPath::reference), "reference"},
    {"fp32, auto (reference, widened)", options(Precision::fp32, AttentionPath::automatic),
     "reference"}};

void attention_on_every_path(std::vector<std::vector<uint32_t>>& results) {
  for (const AttentionConfig& config : kAttentionConfigs) {
    std::printf("attention path: %s\n", config.name);
    Storage st(config.options);
    for (const AttentionShape& s : kAttentionShapes) attention(st, s);
    attention(st, kUnalignedShape, 1);
    for (const ModaShape& s : kModaShapes) moda_attention(st, s);
    const std::string report = st.gpu_ops->attention_paths();
    std::printf("  attention_paths: %s\n", report.c_str());
    // A forced path: one entry per shape and kind (MoDA's listed apart), each naming it (no
    // fallback reasons then; under auto a reason may hold any text).
    if (config.expected_path) {
      const size_t shapes = std::size(kAttentionShapes) + 1 + std::size(kModaShapes);
      size_t entries = 1;
      for (char c : report) entries += c == ';';
      BOOST_TEST(entries == shapes, report);
      const std::string path = std::string(": ") + config.expected_path;
      size_t found = 0;
      for (size_t at = report.find(path); at != std::string::npos; at = report.find(path, at + 1))
        ++found;
      BOOST_TEST(found == shapes, report);
    }
    results.insert(results.end(), st.results.begin(), st.results.end());
  }
}

// Every case but attention, in order, on one Storage.
std::vector<std::vector<uint32_t>> element_ops() {
  Storage st;
  narrow_and_widen(st);
  linear(st, 37, 48, 40);
  linear(st, 20, 50, 30);  // odd leading dimensions (cuBLAS' fallback)
  rmsnorm(st, 2 * 9 * 4, 40);
  rmsnorm(st, 2 * 9 * 4, 64);
  rope(st, 40);
  rope(st, 64);
  swiglu(st);
  copies_and_axpby(st);
  return st.results;
}

}  // namespace

BOOST_AUTO_TEST_CASE(narrow_and_widen_match_the_cpu_bit_for_bit) {
  DB_REQUIRE_GPU();
  Storage st;
  narrow_and_widen(st);
}

BOOST_AUTO_TEST_CASE(products_match_the_cpu_into_bf16_and_fp32_overwritten_and_added) {
  DB_REQUIRE_GPU();
  Storage st;
  linear(st, 37, 48, 40);
  linear(st, 20, 50, 30);
}

BOOST_AUTO_TEST_CASE(qk_norm_rope_and_swiglu_match_the_cpu) {
  DB_REQUIRE_GPU();
  Storage st;
  rmsnorm(st, 2 * 9 * 4, 40);
  rmsnorm(st, 2 * 9 * 4, 64);
  rope(st, 40);
  rope(st, 64);
  swiglu(st);
}

BOOST_AUTO_TEST_CASE(copies_match_the_cpu_bit_for_bit_and_axpby_within_bf16) {
  DB_REQUIRE_GPU();
  Storage st;
  copies_and_axpby(st);
}

BOOST_AUTO_TEST_CASE(attention_and_moda_match_the_cpu_on_every_path_with_gqa_and_padded_heads) {
  DB_REQUIRE_GPU();
  std::vector<std::vector<uint32_t>> results;
  attention_on_every_path(results);
}

BOOST_AUTO_TEST_CASE(a_second_run_gives_the_same_bits) {
  DB_REQUIRE_GPU();
  std::vector<std::vector<uint32_t>> first = element_ops(), second = element_ops();
  attention_on_every_path(first);
  attention_on_every_path(second);
  BOOST_TEST(first.size() == second.size());
  for (size_t i = 0; i < std::min(first.size(), second.size()); ++i)
    BOOST_TEST((first[i] == second[i]), "result " << i << " differs between two runs");
}
