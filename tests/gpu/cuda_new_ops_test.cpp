// The ops that got their CUDA kernels with the CUDA backend (ops/cuda/cuda_ops.cpp): MoDA
// attention, the AttnRes depth softmax, the n-stream ops, the HC/mHC coefficients, the
// deterministic embedding backward and the small copies — each through the CUDA ops object
// against the CPU ops object on fresh random inputs (fp32 bound of gpu_support.hpp), and the
// reductions twice, bit for bit. Without a GPU each case prints "no GPU: skipped" and passes.
#define BOOST_TEST_MODULE cuda_new_ops
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_support.hpp"
#include "ops/cpu/cpu_ops.hpp"
#include "ops/cuda/cuda_ops.hpp"

using namespace db;
using namespace db::test;
using Vec = std::vector<float>;
using cuda::DeviceBuffer;

namespace {

// Both backends and a seed counter, so every input of a test is fresh.
struct Backends {
  std::unique_ptr<Ops<float>> cpu = make_cpu_ops<float>();
  std::unique_ptr<Ops<float>> gpu = cuda::make_cuda_ops();
  uint64_t seed = 100;
  Vec random(size_t n, double scale = 1.0) { return random_floats(n, seed++, scale); }
};

// An output of both backends: the host vector (CPU) and its device twin (GPU), equal at start.
struct Pair {
  Vec host;
  DeviceBuffer<float> device;
  explicit Pair(const Vec& start) : host(start), device(to_device<float>(start)) {}
  float* cpu() { return host.data(); }
  float* gpu() { return device.data(); }
  Vec gpu_values() const { return device.download(); }
};

Vec zeros(size_t n) {
  return Vec(n, 0.f);
}

bool close(const char* what, Pair& p) {
  return within(what, relative_error(p.gpu_values(), p.host), kFp32Tolerance);
}

}  // namespace

BOOST_AUTO_TEST_CASE(moda_attention_matches_cpu_with_grouped_heads_and_depth_entries) {
  DB_REQUIRE_GPU();
  Backends b;
  const ModaShape s{2, 9, 4, 2, 16, 3, 4};  // depth 3 of 4 stored entries per token
  const int64_t rows = s.batch * s.seq_len;
  const size_t qn = rows * s.heads * s.head_dim, kn = rows * s.kv_heads * s.head_dim;
  const size_t dn = rows * s.depth_stride * s.kv_heads * s.head_dim;
  Pair q(b.random(qn)), k(b.random(kn)), v(b.random(kn)), depth_k(b.random(dn)),
      depth_v(b.random(dn));
  Pair o(zeros(qn)), lse(zeros(rows * s.heads)), d_o(b.random(qn));
  Pair dq(zeros(qn)), dk(zeros(kn)), dv(zeros(kn)), ddk(b.random(dn)), ddv(b.random(dn));
  b.cpu->moda_attention_forward(o.cpu(), lse.cpu(), q.cpu(), k.cpu(), v.cpu(), depth_k.cpu(),
                                depth_v.cpu(), s);
  b.gpu->moda_attention_forward(o.gpu(), lse.gpu(), q.gpu(), k.gpu(), v.gpu(), depth_k.gpu(),
                                depth_v.gpu(), s);
  BOOST_TEST(close("moda o", o));
  BOOST_TEST(close("moda lse", lse));
  b.cpu->moda_attention_backward(dq.cpu(), dk.cpu(), dv.cpu(), ddk.cpu(), ddv.cpu(), d_o.cpu(),
                                 o.cpu(), lse.cpu(), q.cpu(), k.cpu(), v.cpu(), depth_k.cpu(),
                                 depth_v.cpu(), s);
  b.gpu->moda_attention_backward(dq.gpu(), dk.gpu(), dv.gpu(), ddk.gpu(), ddv.gpu(), d_o.gpu(),
                                 o.gpu(), lse.gpu(), q.gpu(), k.gpu(), v.gpu(), depth_k.gpu(),
                                 depth_v.gpu(), s);
  BOOST_TEST(close("moda dq", dq));
  BOOST_TEST(close("moda dk", dk));
  BOOST_TEST(close("moda dv", dv));
  BOOST_TEST(close("moda d_depth_k (added)", ddk));
  BOOST_TEST(close("moda d_depth_v (added)", ddv));
}

BOOST_AUTO_TEST_CASE(moda_attention_without_depth_is_causal_attention) {
  DB_REQUIRE_GPU();
  Backends b;
  const ModaShape s{1, 20, 2, 2, 32, 0, 0};
  const size_t n = s.batch * s.seq_len * s.heads * s.head_dim;
  Pair q(b.random(n)), k(b.random(n)), v(b.random(n)), o(zeros(n)), lse(zeros(s.seq_len * s.heads));
  Pair o_ref(zeros(n)), lse_ref(zeros(s.seq_len * s.heads));
  b.gpu->moda_attention_forward(o.gpu(), lse.gpu(), q.gpu(), k.gpu(), v.gpu(), nullptr, nullptr, s);
  b.gpu->attention_forward(o_ref.gpu(), lse_ref.gpu(), q.gpu(), k.gpu(), v.gpu(),
                           {s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim});
  BOOST_TEST(within("moda(depth 0) vs attention",
                    relative_error(o.gpu_values(), o_ref.gpu_values()), kFp32Tolerance));
}

BOOST_AUTO_TEST_CASE(depth_softmax_matches_cpu_and_its_sums_are_deterministic) {
  DB_REQUIRE_GPU();
  Backends b;
  const DepthMixShape s{150, 48, 5, 1e-6};  // 150 rows: three row chunks
  const size_t n = s.rows * s.d;
  std::vector<Pair> src, dsrc;
  for (int i = 0; i < s.sources; ++i) {
    src.emplace_back(b.random(n));
    dsrc.emplace_back(b.random(n));
  }
  Pair query(b.random(s.d)), gain(b.random(s.d, 0.3)), h(zeros(n)), dh(b.random(n));
  for (float& g : gain.host) g += 1.f;
  gain.device.upload(gain.host);
  Pair w(zeros(s.rows * s.sources)), rstd(zeros(s.rows * s.sources));
  Pair dquery(b.random(s.d)), dgain(b.random(s.d));
  std::vector<const float*> src_cpu, src_gpu;
  std::vector<float*> dsrc_cpu, dsrc_gpu;
  for (int i = 0; i < s.sources; ++i) {
    src_cpu.push_back(src[i].cpu());
    src_gpu.push_back(src[i].gpu());
    dsrc_cpu.push_back(dsrc[i].cpu());
    dsrc_gpu.push_back(dsrc[i].gpu());
  }
  b.cpu->depth_softmax_forward(h.cpu(), w.cpu(), rstd.cpu(), src_cpu.data(), query.cpu(),
                               gain.cpu(), s);
  b.gpu->depth_softmax_forward(h.gpu(), w.gpu(), rstd.gpu(), src_gpu.data(), query.gpu(),
                               gain.gpu(), s);
  BOOST_TEST(close("depth softmax h", h));
  BOOST_TEST(close("depth softmax weights", w));
  BOOST_TEST(close("depth softmax rstd", rstd));
  const Vec dquery_start = dquery.gpu_values();
  b.cpu->depth_softmax_backward(dsrc_cpu.data(), dquery.cpu(), dgain.cpu(), dh.cpu(),
                                src_cpu.data(), w.cpu(), rstd.cpu(), query.cpu(), gain.cpu(), s);
  b.gpu->depth_softmax_backward(dsrc_gpu.data(), dquery.gpu(), dgain.gpu(), dh.gpu(),
                                src_gpu.data(), w.gpu(), rstd.gpu(), query.gpu(), gain.gpu(), s);
  for (int i = 0; i < s.sources; ++i)
    BOOST_TEST(close(("dsource " + std::to_string(i) + " (added)").c_str(), dsrc[i]));
  BOOST_TEST(close("dquery (added)", dquery));
  BOOST_TEST(close("dkey_gain (added)", dgain));
  // Again from the same start: the same bits.
  const Vec first = dquery.gpu_values();
  dquery.device.upload(dquery_start);
  b.gpu->depth_softmax_backward(dsrc_gpu.data(), dquery.gpu(), dgain.gpu(), dh.gpu(),
                                src_gpu.data(), w.gpu(), rstd.gpu(), query.gpu(), gain.gpu(), s);
  BOOST_TEST((dquery.gpu_values() == first));
}

BOOST_AUTO_TEST_CASE(stream_ops_match_cpu_for_hc_and_mhc_maps) {
  DB_REQUIRE_GPU();
  Backends b;
  const int64_t rows = 67;
  const int n = 4, d = 40;
  const size_t state = rows * n * d, single = rows * d;
  Pair x(b.random(single)), H(b.random(state)), y(b.random(single)), g(b.random(state));
  Pair out(zeros(state)), sum(zeros(single)), combined(zeros(single));
  b.cpu->broadcast_streams(out.cpu(), x.cpu(), rows, n, d);
  b.gpu->broadcast_streams(out.gpu(), x.gpu(), rows, n, d);
  BOOST_TEST(close("broadcast_streams", out));
  b.cpu->sum_streams(sum.cpu(), H.cpu(), 0.25f, rows, n, d);
  b.gpu->sum_streams(sum.gpu(), H.gpu(), 0.25f, rows, n, d);
  BOOST_TEST(close("sum_streams", sum));
  // combine with a stride (HC reads β with stride 1, mHC's pre weights too; 3 tests the stride).
  const int stride = 3;
  Pair weights(b.random(rows * n * stride)), dweights(b.random(rows * n * stride));
  Pair dH(b.random(state));
  b.cpu->combine_streams(combined.cpu(), H.cpu(), weights.cpu(), stride, rows, n, d);
  b.gpu->combine_streams(combined.gpu(), H.gpu(), weights.gpu(), stride, rows, n, d);
  BOOST_TEST(close("combine_streams", combined));
  b.cpu->combine_streams_backward(dweights.cpu(), dH.cpu(), x.cpu(), H.cpu(), weights.cpu(), stride,
                                  rows, n, d);
  b.gpu->combine_streams_backward(dweights.gpu(), dH.gpu(), x.gpu(), H.gpu(), weights.gpu(), stride,
                                  rows, n, d);
  BOOST_TEST(close("combine_streams dweights", dweights));
  BOOST_TEST(close("combine_streams dH (added)", dH));
  // The HC map (α [rows, n, n+1]) and the mHC map (H_res [rows, n, n]).
  const StreamMapLayout maps[] = {{int64_t(n) * (n + 1), 1, n + 1, 1}, {int64_t(n) * n, n, 1, 0}};
  for (const StreamMapLayout& map : maps) {
    Pair post(b.random(rows * n)), mix(b.random(rows * map.row)), mixed(zeros(state));
    Pair dy(zeros(single)), dpost(zeros(rows * n)), dmix(b.random(rows * map.row)),
        dHm(zeros(state));
    b.cpu->mix_streams(mixed.cpu(), H.cpu(), y.cpu(), post.cpu(), mix.cpu(), map, rows, n, d);
    b.gpu->mix_streams(mixed.gpu(), H.gpu(), y.gpu(), post.gpu(), mix.gpu(), map, rows, n, d);
    BOOST_TEST(close("mix_streams", mixed));
    b.cpu->mix_streams_backward(dy.cpu(), dpost.cpu(), dmix.cpu(), dHm.cpu(), g.cpu(), H.cpu(),
                                y.cpu(), post.cpu(), mix.cpu(), map, rows, n, d);
    b.gpu->mix_streams_backward(dy.gpu(), dpost.gpu(), dmix.gpu(), dHm.gpu(), g.gpu(), H.gpu(),
                                y.gpu(), post.gpu(), mix.gpu(), map, rows, n, d);
    BOOST_TEST(close("mix_streams dy", dy));
    BOOST_TEST(close("mix_streams dpost", dpost));
    BOOST_TEST(close("mix_streams dmix (non-map entries kept)", dmix));
    BOOST_TEST(close("mix_streams dH", dHm));
  }
}

BOOST_AUTO_TEST_CASE(hc_and_mhc_coefficients_match_cpu_and_their_sums_are_deterministic) {
  DB_REQUIRE_GPU();
  Backends b;
  const int64_t rows = 150;
  const int n = 4, na = n * (n + 1);
  {  // HC
    Pair ta(b.random(rows * na)), tb(b.random(rows * n)), alpha(zeros(rows * na)),
        beta(zeros(rows * n));
    Pair sa(b.random(na)), sb(b.random(n)), scale_a(b.random(1, 0.1)), scale_b(b.random(1, 0.1));
    b.cpu->hc_coefficients(alpha.cpu(), beta.cpu(), ta.cpu(), tb.cpu(), sa.cpu(), sb.cpu(),
                           scale_a.cpu(), scale_b.cpu(), rows, n);
    b.gpu->hc_coefficients(alpha.gpu(), beta.gpu(), ta.gpu(), tb.gpu(), sa.gpu(), sb.gpu(),
                           scale_a.gpu(), scale_b.gpu(), rows, n);
    BOOST_TEST(close("hc alpha", alpha));
    BOOST_TEST(close("hc beta", beta));
    BOOST_TEST(close("hc tanh(za)", ta));
    Pair dalpha(b.random(rows * na)), dbeta(b.random(rows * n)), dza(zeros(rows * na)),
        dzb(zeros(rows * n));
    Pair dsa(b.random(na)), dsb(b.random(n)), dscale_a(b.random(1)), dscale_b(b.random(1));
    const Vec dsa_start = dsa.host;
    b.cpu->hc_coefficients_backward(dza.cpu(), dzb.cpu(), dsa.cpu(), dsb.cpu(), dscale_a.cpu(),
                                    dscale_b.cpu(), dalpha.cpu(), dbeta.cpu(), ta.cpu(), tb.cpu(),
                                    scale_a.cpu(), scale_b.cpu(), rows, n);
    b.gpu->hc_coefficients_backward(dza.gpu(), dzb.gpu(), dsa.gpu(), dsb.gpu(), dscale_a.gpu(),
                                    dscale_b.gpu(), dalpha.gpu(), dbeta.gpu(), ta.gpu(), tb.gpu(),
                                    scale_a.gpu(), scale_b.gpu(), rows, n);
    BOOST_TEST(close("hc dza", dza));
    BOOST_TEST(close("hc dzb", dzb));
    BOOST_TEST(close("hc dstatic_alpha (added)", dsa));
    BOOST_TEST(close("hc dstatic_beta (added)", dsb));
    BOOST_TEST(close("hc ds_alpha (added)", dscale_a));
    BOOST_TEST(close("hc ds_beta (added)", dscale_b));
    const Vec first = dsa.gpu_values();
    dsa.device.upload(dsa_start);
    b.gpu->hc_coefficients_backward(dza.gpu(), dzb.gpu(), dsa.gpu(), dsb.gpu(), dscale_a.gpu(),
                                    dscale_b.gpu(), dalpha.gpu(), dbeta.gpu(), ta.gpu(), tb.gpu(),
                                    scale_a.gpu(), scale_b.gpu(), rows, n);
    BOOST_TEST((dsa.gpu_values() == first));
  }
  {  // mHC
    const int m = n * n + 2 * n;
    Pair z(b.random(rows * m)), gates(b.random(3, 0.5)), bias(b.random(m));
    Pair pre(zeros(rows * n)), post(zeros(rows * n)), res(zeros(rows * n * n));
    b.cpu->mhc_coefficients(pre.cpu(), post.cpu(), res.cpu(), z.cpu(), gates.cpu(), bias.cpu(),
                            rows, n);
    b.gpu->mhc_coefficients(pre.gpu(), post.gpu(), res.gpu(), z.gpu(), gates.gpu(), bias.gpu(),
                            rows, n);
    BOOST_TEST(close("mhc pre", pre));
    BOOST_TEST(close("mhc post", post));
    BOOST_TEST(close("mhc res_logits", res));
    Pair dpre(b.random(rows * n)), dpost(b.random(rows * n)), dres(b.random(rows * n * n));
    Pair dz(zeros(rows * m)), dgates(b.random(3)), dbias(b.random(m));
    b.cpu->mhc_coefficients_backward(dz.cpu(), dgates.cpu(), dbias.cpu(), dpre.cpu(), dpost.cpu(),
                                     dres.cpu(), z.cpu(), pre.cpu(), post.cpu(), gates.cpu(), rows,
                                     n);
    b.gpu->mhc_coefficients_backward(dz.gpu(), dgates.gpu(), dbias.gpu(), dpre.gpu(), dpost.gpu(),
                                     dres.gpu(), z.gpu(), pre.gpu(), post.gpu(), gates.gpu(), rows,
                                     n);
    BOOST_TEST(close("mhc dz", dz));
    BOOST_TEST(close("mhc dgates (added)", dgates));
    BOOST_TEST(close("mhc dbias (added)", dbias));
  }
}

BOOST_AUTO_TEST_CASE(embedding_backward_adds_rows_in_the_cpu_order_bit_for_bit) {
  DB_REQUIRE_GPU();
  Backends b;
  const int vocab = 23, d = 300;  // d > 256: two column tiles
  const int64_t rows = 500;       // many repeats of every token
  std::vector<int32_t> tokens(rows);
  for (int64_t r = 0; r < rows; ++r) tokens[r] = int32_t((r * 7 + r / 13) % vocab);
  DeviceBuffer<int32_t> tokens_gpu;
  tokens_gpu.upload(tokens);
  Pair dx(b.random(rows * d)), table(b.random(size_t(vocab) * d));
  b.cpu->embedding_backward(table.cpu(), tokens.data(), dx.cpu(), rows, d);
  b.gpu->embedding_backward(table.gpu(), tokens_gpu.data(), dx.gpu(), rows, d);
  BOOST_TEST((table.gpu_values() == table.host), "the same additions in the same order");
}

BOOST_AUTO_TEST_CASE(copies_axpby_and_row_losses_match_cpu) {
  DB_REQUIRE_GPU();
  Backends b;
  const int64_t count = 1000;
  Pair x(b.random(count));
  const std::pair<float, float> cases[] = {{2.f, 0.f}, {1.f, 1.f}, {0.5f, -3.f}};  // (a, b)
  for (const auto& [a, c] : cases) {
    Pair y(b.random(count));
    b.cpu->axpby(y.cpu(), a, x.cpu(), c, count);
    b.gpu->axpby(y.gpu(), a, x.gpu(), c, count);
    BOOST_TEST(close("axpby", y));
  }
  Pair rows_out(b.random(40 * 12));
  b.cpu->copy_rows(rows_out.cpu(), 12, x.cpu() + 3, 25, 40, 9);
  b.gpu->copy_rows(rows_out.gpu(), 12, x.gpu() + 3, 25, 40, 9);
  BOOST_TEST((rows_out.gpu_values() == rows_out.host));
  const HeadShape s{33, 24, 61};
  Pair h(b.random(s.rows * s.d)), W(b.random(size_t(s.vocab) * s.d, 0.2));
  std::vector<int32_t> targets(s.rows);
  for (int64_t r = 0; r < s.rows; ++r) targets[r] = r % 5 == 4 ? -1 : int32_t(r * 11 % s.vocab);
  DeviceBuffer<int32_t> targets_gpu;
  targets_gpu.upload(targets);
  std::vector<double> cpu_losses(s.rows), gpu_losses(s.rows);
  b.cpu->cross_entropy_rows(cpu_losses.data(), h.cpu(), W.cpu(), targets.data(), s);
  b.gpu->cross_entropy_rows(gpu_losses.data(), h.gpu(), W.gpu(), targets_gpu.data(), s);
  BOOST_TEST(within("cross_entropy_rows",
                    relative_error(Vec(gpu_losses.begin(), gpu_losses.end()),
                                   Vec(cpu_losses.begin(), cpu_losses.end())),
                    kFp32Tolerance));
  Pair logits(zeros(s.rows * s.vocab));
  b.cpu->logits(logits.cpu(), h.cpu(), W.cpu(), s);
  b.gpu->logits(logits.gpu(), h.gpu(), W.gpu(), s);
  BOOST_TEST(close("logits", logits));
}
