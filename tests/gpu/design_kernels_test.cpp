// The design kernels (model/residual/: the n-stream ops of HC and mHC, Sinkhorn, the AttnRes
// depth softmax) run by the generic launchers (ops/launch.hpp) on the GPU against the same
// functors run by the host loop, and the row sums twice, bit for bit. This file launches
// functors itself, so it is compiled by nvcc (tests/gpu/tests.cmake). Without a GPU each case
// prints "no GPU: skipped" and passes.
#define BOOST_TEST_MODULE design_kernels
#define BOOST_TEST_DYN_LINK
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "gpu/gpu_support.hpp"
#include "model/residual/depth_softmax.hpp"
#include "model/residual/normed_product.hpp"
#include "model/residual/sinkhorn.hpp"
#include "model/residual/stream_kernels.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "support/bf16_values.hpp"

using namespace db;
using namespace db::test;
using Vec = std::vector<float>;
using cuda::DeviceBuffer;

namespace {

// Values stored in bf16 on both sides (train.state_dtype = bf16: AttnRes's sources and dh).
struct NarrowPair {
  std::vector<bfloat16> host;
  cuda::DeviceBuffer<bfloat16> device;
  explicit NarrowPair(const Vec& v) : host(to_bf16(v)) { device.upload(host); }
  StateValues<float> cpu() const { return {nullptr, host.data()}; }
  StateValues<float> gpu() const { return {nullptr, device.data()}; }
};

// A seed counter, so every input of a test is fresh.
struct Backends {
  uint64_t seed = 100;
  Vec random(size_t n, double scale = 1.0) { return random_floats(n, seed++, scale); }
};

}  // namespace

BOOST_AUTO_TEST_CASE(depth_softmax_host_loop_matches_the_kernel_and_its_sums_are_deterministic) {
  DB_REQUIRE_GPU();
  Backends b;
  // 150 rows: three row chunks; 5, 20 and 70 sources: the functors' three source capacities;
  // the forward and backward in two passes and in one read (train.fused_kernels: the online
  // softmax and the gathered backward), whose two row capacities d = 48 and 1100 take (d not a
  // multiple of 32). The last two read their sources and dh from bf16 (train.state_dtype = bf16).
  struct Case {
    int sources, d;
    bool one_pass, bf16_state;
  };
  for (const Case c : {Case{5, 48, false, false}, Case{20, 48, false, false},
                       Case{70, 48, false, false}, Case{5, 48, true, false},
                       Case{70, 48, true, false}, Case{20, 1100, true, false},
                       Case{20, 48, false, true}, Case{70, 1100, true, true}})
    BOOST_TEST_CONTEXT("sources = " << c.sources << ", d = " << c.d
                                    << (c.one_pass ? ", one pass" : ", two passes")
                                    << (c.bf16_state ? ", bf16 sources and dh" : "")) {
      const DepthMixShape s{150, c.d, c.sources, 1e-6};
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
      std::vector<NarrowPair> narrow;  // the sources, then dh, where bf16
      if (c.bf16_state) {
        for (Pair& p : src) narrow.emplace_back(p.host);
        narrow.emplace_back(dh.host);
      }
      std::vector<StateValues<float>> src_cpu, src_gpu;
      std::vector<float*> dsrc_cpu, dsrc_gpu;
      for (int i = 0; i < s.sources; ++i) {
        src_cpu.push_back(c.bf16_state ? narrow[i].cpu() : StateValues<float>(src[i].cpu()));
        src_gpu.push_back(c.bf16_state ? narrow[i].gpu() : StateValues<float>(src[i].gpu()));
        dsrc_cpu.push_back(dsrc[i].cpu());
        dsrc_gpu.push_back(dsrc[i].gpu());
      }
      const StateValues<float> dh_cpu = c.bf16_state ? narrow.back().cpu() : dh.cpu(),
                               dh_gpu = c.bf16_state ? narrow.back().gpu() : dh.gpu();
      depth_softmax_forward(MemorySpace::host, c.one_pass, h.cpu(), w.cpu(), rstd.cpu(), src_cpu,
                            query.cpu(), gain.cpu(), s);
      depth_softmax_forward(cuda::cuda_memory_space(), c.one_pass, h.gpu(), w.gpu(), rstd.gpu(),
                            src_gpu, query.gpu(), gain.gpu(), s);
      BOOST_TEST(close("depth softmax h", h));
      BOOST_TEST(close("depth softmax weights", w));
      BOOST_TEST(close("depth softmax rstd", rstd));
      const Vec dquery_start = dquery.gpu_values();
      // The backward: two passes adding into the source gradients, or gathered (the consumer's
      // dlogits, then each source's gradient written from them and the weights; the last source, as
      // Block AttnRes's partial sum, added by the consumer).
      Pair dlogits(zeros(s.rows * s.sources));
      auto backward = [&](MemorySpace space, const std::vector<float*>& dsrc,
                          const std::vector<StateValues<float>>& src, StateValues<float> dh_values,
                          auto at) {
        if (!c.one_pass) {
          depth_softmax_backward<float>(space, dsrc, at(dquery), at(dgain), dh_values, src, at(w),
                                        at(rstd), at(query), at(gain), s);
          return;
        }
        std::vector<float*> added(s.sources, nullptr);
        added.back() = dsrc.back();
        depth_softmax_consumer_backward<float>(space, added, at(dlogits), at(dquery), at(dgain),
                                               dh_values, at(h), src, at(w), at(rstd), at(query),
                                               at(gain), s);
        for (int i = 0; i + 1 < s.sources; ++i)
          depth_softmax_gather<float>(
              space, dsrc[i], src[i],
              {{dh_values, at(w) + i, at(dlogits) + i, at(query), at(gain), s.sources}}, s.rows, s.d,
              s.eps);
      };
      backward(MemorySpace::host, dsrc_cpu, src_cpu, dh_cpu, [](Pair& p) { return p.cpu(); });
      backward(cuda::cuda_memory_space(), dsrc_gpu, src_gpu, dh_gpu,
               [](Pair& p) { return p.gpu(); });
      for (int i = 0; i < s.sources; ++i)
        BOOST_TEST(close(("dsource " + std::to_string(i)).c_str(), dsrc[i]));
      BOOST_TEST(close("dquery (added)", dquery));
      BOOST_TEST(close("dkey_gain (added)", dgain));
      if (c.one_pass) BOOST_TEST(close("gather dlogits", dlogits));
      // Again from the same start: the same bits.
      const Vec first = dquery.gpu_values();
      dquery.device.upload(dquery_start);
      backward(cuda::cuda_memory_space(), dsrc_gpu, src_gpu, dh_gpu,
               [](Pair& p) { return p.gpu(); });
      BOOST_TEST((dquery.gpu_values() == first));
    }
}

BOOST_AUTO_TEST_CASE(gathered_source_gradient_host_loop_matches_the_kernel) {
  DB_REQUIRE_GPU();
  Backends b;
  // 150 rows; 5 and 70 consumers of one source (two list capacities), one of them reading it
  // directly (weight 1); d = 48 and 1100 (the two row capacities).
  for (const int consumers : {5, 70})
    for (const int d : {48, 1100})
      BOOST_TEST_CONTEXT("consumers = " << consumers << ", d = " << d) {
        const int64_t rows = 150;
        const size_t n = rows * d;
        const int stride = 3;  // weights and dlogits of 3 sources a consumer, this one the second
        Pair v(b.random(n)), dv(zeros(n));
        std::vector<Pair> dh, weights, dlogits, query, gain;
        for (int k = 0; k < consumers; ++k) {
          dh.emplace_back(b.random(n));
          weights.emplace_back(b.random(rows * stride, 0.5));
          dlogits.emplace_back(b.random(rows * stride, 0.5));
          query.emplace_back(b.random(d, 0.1));
          gain.emplace_back(b.random(d, 0.3));
        }
        auto list = [&](auto at) {
          std::vector<DepthGatherTerm<float>> l;
          for (int k = 0; k < consumers; ++k)
            l.push_back({at(dh[k]), k == 0 ? nullptr : at(weights[k]) + 1, at(dlogits[k]) + 1,
                         at(query[k]), at(gain[k]), stride});
          return l;
        };
        depth_softmax_gather<float>(MemorySpace::host, dv.cpu(), v.cpu(),
                                    list([](Pair& p) { return p.cpu(); }), rows, d, 1e-6);
        depth_softmax_gather<float>(cuda::cuda_memory_space(), dv.gpu(), v.gpu(),
                                    list([](Pair& p) { return p.gpu(); }), rows, d, 1e-6);
        BOOST_TEST(close("gathered dsource", dv));
      }
}

BOOST_AUTO_TEST_CASE(stream_ops_host_loop_match_the_kernels_for_hc_and_mhc_maps) {
  DB_REQUIRE_GPU();
  Backends b;
  const int64_t rows = 67;
  const int n = 4, d = 40;
  const size_t state = rows * n * d, single = rows * d;
  Pair x(b.random(single)), H(b.random(state)), y(b.random(single)), g(b.random(state));
  Pair out(zeros(state)), sum(zeros(single)), combined(zeros(single));
  broadcast_streams(MemorySpace::host, out.cpu(), x.cpu(), rows, n, d);
  broadcast_streams(cuda::cuda_memory_space(), out.gpu(), x.gpu(), rows, n, d);
  BOOST_TEST(close("broadcast_streams", out));
  sum_streams(MemorySpace::host, sum.cpu(), H.cpu(), 0.25f, rows, n, d);
  sum_streams(cuda::cuda_memory_space(), sum.gpu(), H.gpu(), 0.25f, rows, n, d);
  BOOST_TEST(close("sum_streams", sum));
  // combine with a stride (HC reads β with stride 1, mHC's pre weights too; 3 tests the stride).
  const int stride = 3;
  Pair weights(b.random(rows * n * stride)), dweights(b.random(rows * n * stride));
  Pair dH(b.random(state));
  combine_streams(MemorySpace::host, combined.cpu(), H.cpu(), weights.cpu(), stride, rows, n, d);
  combine_streams(cuda::cuda_memory_space(), combined.gpu(), H.gpu(), weights.gpu(), stride, rows,
                  n, d);
  BOOST_TEST(close("combine_streams", combined));
  // The combine fused with the sublayer's pre-norm (a warp per row on the GPU), gain and none.
  Pair gain(b.random(d, 0.3));
  for (float& v : gain.host) v += 1.f;
  gain.device.upload(gain.host);
  for (bool with_gain : {true, false}) {
    Pair fused_x(zeros(single)), fused_u(zeros(single)), fused_rstd(zeros(rows));
    const float* gain_cpu = with_gain ? gain.cpu() : nullptr;
    const float* gain_gpu = with_gain ? gain.gpu() : nullptr;
    combine_streams_rmsnorm(MemorySpace::host, fused_x.cpu(), fused_u.cpu(), fused_rstd.cpu(),
                            H.cpu(), weights.cpu(), stride, gain_cpu, 1e-5, rows, n, d);
    combine_streams_rmsnorm(cuda::cuda_memory_space(), fused_x.gpu(), fused_u.gpu(),
                            fused_rstd.gpu(), H.gpu(), weights.gpu(), stride, gain_gpu, 1e-5, rows,
                            n, d);
    BOOST_TEST(close("combine_streams_rmsnorm x", fused_x));
    BOOST_TEST(close("combine_streams_rmsnorm u", fused_u));
    BOOST_TEST(close("combine_streams_rmsnorm rstd", fused_rstd));
  }
  combine_streams_backward(MemorySpace::host, dweights.cpu(), dH.cpu(), x.cpu(), H.cpu(),
                           weights.cpu(), stride, rows, n, d);
  combine_streams_backward(cuda::cuda_memory_space(), dweights.gpu(), dH.gpu(), x.gpu(), H.gpu(),
                           weights.gpu(), stride, rows, n, d);
  BOOST_TEST(close("combine_streams dweights", dweights));
  BOOST_TEST(close("combine_streams dH (added)", dH));
  // The HC map (α [rows, n, n+1]) and the mHC map (H_res [rows, n, n]).
  const StreamMapLayout maps[] = {{int64_t(n) * (n + 1), 1, n + 1, 1}, {int64_t(n) * n, n, 1, 0}};
  for (const StreamMapLayout& map : maps) {
    Pair post(b.random(rows * n)), mix(b.random(rows * map.row)), mixed(zeros(state));
    Pair dy(zeros(single)), dpost(zeros(rows * n)), dmix(b.random(rows * map.row)),
        dHm(zeros(state));
    mix_streams(MemorySpace::host, mixed.cpu(), H.cpu(), y.cpu(), post.cpu(), mix.cpu(), map, rows,
                n, d);
    mix_streams(cuda::cuda_memory_space(), mixed.gpu(), H.gpu(), y.gpu(), post.gpu(), mix.gpu(),
                map, rows, n, d);
    BOOST_TEST(close("mix_streams", mixed));
    // The mix with the next stream norm's rstd (a warp per norm row: HC a stream, mHC a token;
    // d = 40 is no multiple of 32, so a token's row starts its streams at different lanes).
    const int streams = map.offset ? 1 : n;
    Pair mixed_rstd(zeros(state)), rstd(zeros(rows * n / streams));
    mix_streams_rstd(MemorySpace::host, mixed_rstd.cpu(), rstd.cpu(), H.cpu(), y.cpu(), post.cpu(),
                     mix.cpu(), map, rows, n, d, streams, 1e-5);
    mix_streams_rstd(cuda::cuda_memory_space(), mixed_rstd.gpu(), rstd.gpu(), H.gpu(), y.gpu(),
                     post.gpu(), mix.gpu(), map, rows, n, d, streams, 1e-5);
    BOOST_TEST(close("mix_streams_rstd state", mixed_rstd));
    BOOST_TEST(close("mix_streams_rstd rstd", rstd));
    // The two passes, and the one pass per token (MixGrads, a warp per token on the GPU).
    for (bool one_pass : {false, true}) {
      BOOST_TEST_CONTEXT((one_pass ? "one pass" : "two passes")) {
        mix_streams_backward(MemorySpace::host, one_pass, dy.cpu(), dpost.cpu(), dmix.cpu(),
                             dHm.cpu(), g.cpu(), H.cpu(), y.cpu(), post.cpu(), mix.cpu(), map, rows,
                             n, d);
        mix_streams_backward(cuda::cuda_memory_space(), one_pass, dy.gpu(), dpost.gpu(), dmix.gpu(),
                             dHm.gpu(), g.gpu(), H.gpu(), y.gpu(), post.gpu(), mix.gpu(), map, rows,
                             n, d);
        BOOST_TEST(close("mix_streams dy", dy));
        BOOST_TEST(close("mix_streams dpost", dpost));
        BOOST_TEST(close("mix_streams dmix (non-map entries kept)", dmix));
        BOOST_TEST(close("mix_streams dH", dHm));
      }
    }
  }
}

// HC's and mHC's coefficient product from the streams themselves (normed_product.hpp): the
// per-row kernels around its two GEMMs — the row rstd and the input gradient a warp per row, the
// gain folded into W, the rstd row scaling, the weight and gain gradients — against the host loop.
BOOST_AUTO_TEST_CASE(normed_product_kernels_match_the_host_loop) {
  DB_REQUIRE_GPU();
  namespace k = normed_product_kernels;
  const MemorySpace gpu = cuda::cuda_memory_space();
  Backends b;
  const int64_t rows = 67;
  const int width = 160, ca = 5, cb = 1, m = ca + cb;  // HC with n = 4: [W_α | W_β]
  Pair x(b.random(rows * width, 2.0)), gain(b.random(width, 0.3)), a(b.random(width * ca)),
      w_b(b.random(width * cb)), dz(b.random(rows * m)), G(b.random(width * m));
  for (float& v : gain.host) v += 1.f;
  gain.device.upload(gain.host);
  Pair rstd(zeros(rows)), gw(zeros(width * m)), z(b.random(rows * m)), zs(zeros(rows * m));
  for_each_row_lanes(MemorySpace::host, rows, k::RowRstd<float>{rstd.cpu(), x.cpu(), width, 1e-5});
  for_each_row_lanes(gpu, rows, k::RowRstd<float>{rstd.gpu(), x.gpu(), width, 1e-5});
  BOOST_TEST(close("RowRstd", rstd));
  for_each_row_element(MemorySpace::host, width, m,
                       k::FoldGain<float>{gw.cpu(), gain.cpu(), a.cpu(), w_b.cpu(), ca, cb});
  for_each_row_element(gpu, width, m,
                       k::FoldGain<float>{gw.gpu(), gain.gpu(), a.gpu(), w_b.gpu(), ca, cb});
  BOOST_TEST(close("FoldGain", gw));
  for_each_row_element(MemorySpace::host, rows, m,
                       k::ScaleRows<float>{zs.cpu(), z.cpu(), rstd.cpu(), m});
  for_each_row_element(gpu, rows, m, k::ScaleRows<float>{zs.gpu(), z.gpu(), rstd.gpu(), m});
  BOOST_TEST(close("ScaleRows", zs));
  Pair da(b.random(width * ca)), db(b.random(width * cb)), dgain(b.random(width));
  for_each_index(MemorySpace::host, width,
                 k::WeightGrads<float>{da.cpu(), db.cpu(), dgain.cpu(), G.cpu(), gain.cpu(),
                                       a.cpu(), w_b.cpu(), ca, cb});
  for_each_index(gpu, width,
                 k::WeightGrads<float>{da.gpu(), db.gpu(), dgain.gpu(), G.gpu(), gain.gpu(),
                                       a.gpu(), w_b.gpu(), ca, cb});
  BOOST_TEST(close("WeightGrads dA (added)", da));
  BOOST_TEST(close("WeightGrads dB (added)", db));
  BOOST_TEST(close("WeightGrads dgain (added)", dgain));
  // dn formed per row from dz and gw (small gw), and read from a given dn (a product's).
  Pair dn(b.random(rows * width));
  for (bool given : {false, true}) {
    Pair dx(b.random(rows * width));
    const float* dn_cpu = given ? dn.cpu() : nullptr;
    const float* dn_gpu = given ? dn.gpu() : nullptr;
    for_each_row_lanes(
        MemorySpace::host, rows,
        k::InputGrad<float>{dx.cpu(), dn_cpu, dz.cpu(), x.cpu(), gw.cpu(), rstd.cpu(), width, m});
    for_each_row_lanes(
        gpu, rows,
        k::InputGrad<float>{dx.gpu(), dn_gpu, dz.gpu(), x.gpu(), gw.gpu(), rstd.gpu(), width, m});
    BOOST_TEST(close(given ? "InputGrad dx (added), dn given" : "InputGrad dx (added)", dx));
  }
  // With the HC/mHC combine's input gradient added in the same pass (CombineInputTerm): the 67
  // rows of 160 values as mHC's (67 tokens of n = 4 streams of d = 40, a row per token) and as
  // HC's (one token of n = 67 streams of d = 160, a row per stream), stride 5 as HC's α.
  const int stride = 5;
  struct Layout {
    int n, d;
    int64_t tokens;
  };
  for (const Layout l : {Layout{4, 40, rows}, Layout{int(rows), width, 1}}) {
    Pair dx(b.random(rows * width)), weights(b.random(l.tokens * l.n * stride)),
        dx_in(b.random(l.tokens * l.d));
    for_each_row_lanes(MemorySpace::host, rows,
                       k::InputGrad<float>{dx.cpu(),
                                           nullptr,
                                           dz.cpu(),
                                           x.cpu(),
                                           gw.cpu(),
                                           rstd.cpu(),
                                           width,
                                           m,
                                           {dx_in.cpu(), weights.cpu(), stride, l.n, l.d}});
    for_each_row_lanes(gpu, rows,
                       k::InputGrad<float>{dx.gpu(),
                                           nullptr,
                                           dz.gpu(),
                                           x.gpu(),
                                           gw.gpu(),
                                           rstd.gpu(),
                                           width,
                                           m,
                                           {dx_in.gpu(), weights.gpu(), stride, l.n, l.d}});
    BOOST_TEST(close(l.tokens == 1 ? "InputGrad dx (added), HC combine term"
                                   : "InputGrad dx (added), mHC combine term",
                     dx));
  }
}

namespace {
// Double-precision Sinkhorn of one token (spec §8), the reference for the kernel.
std::vector<double> sinkhorn_reference(const std::vector<double>& l, int n, int iterations,
                                       double eps) {
  std::vector<double> M(n * n);
  for (int i = 0; i < n; ++i) {
    double row_max = l[i * n];
    for (int j = 1; j < n; ++j) row_max = std::max(row_max, l[i * n + j]);
    for (int j = 0; j < n; ++j) M[i * n + j] = std::exp(l[i * n + j] - row_max);
  }
  for (int it = 0; it < iterations; ++it) {
    for (int i = 0; i < n; ++i) {
      double s = 0;
      for (int j = 0; j < n; ++j) s += M[i * n + j];
      for (int j = 0; j < n; ++j) M[i * n + j] /= s + eps;
    }
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int i = 0; i < n; ++i) s += M[i * n + j];
      for (int i = 0; i < n; ++i) M[i * n + j] /= s + eps;
    }
  }
  return M;
}
}  // namespace

BOOST_AUTO_TEST_CASE(sinkhorn_matches_reference_and_finite_differences) {
  DB_REQUIRE_GPU();
  for (int n : {2, 4, 5, 8, 16}) {  // the three capacities of the Sinkhorn functors
    const int64_t N = 16;
    const int nn = n * n, iterations = 20;
    const double eps = 1e-6;
    const Vec logits = random_floats(N * nn, 70, 2.0), G = random_floats(N * nn, 71);
    cuda::DeviceBuffer<float> logits_d, G_d, out_d(N * nn), dl_d(N * nn);
    logits_d.upload(logits);
    G_d.upload(G);
    sinkhorn_forward(cuda::cuda_memory_space(), out_d.data(), logits_d.data(),
                     {N, n, iterations, eps});
    sinkhorn_backward(cuda::cuda_memory_space(), dl_d.data(), G_d.data(), logits_d.data(),
                      {N, n, iterations, eps});
    Vec out(N * nn), dl(N * nn);
    for (int64_t t = 0; t < N; ++t) {
      std::vector<double> l(logits.begin() + t * nn, logits.begin() + (t + 1) * nn);
      const auto M = sinkhorn_reference(l, n, iterations, eps);
      for (int i = 0; i < nn; ++i) out[t * nn + i] = float(M[i]);
      for (int i = 0; i < nn; ++i) {  // d(Σ G⊙S)/dl by central differences
        const double h = 1e-5, saved = l[i];
        double f[2];
        for (int side = 0; side < 2; ++side) {
          l[i] = saved + (side ? -h : h);
          const auto S = sinkhorn_reference(l, n, iterations, eps);
          f[side] = 0;
          for (int k = 0; k < nn; ++k) f[side] += double(G[t * nn + k]) * S[k];
        }
        l[i] = saved;
        dl[t * nn + i] = float((f[0] - f[1]) / (2 * h));
      }
    }
    std::printf(" sinkhorn n=%d\n", n);
    BOOST_TEST(within("forward", relative_error(out_d.download(), out), 1e-5));
    BOOST_TEST(within("backward vs finite differences", relative_error(dl_d.download(), dl), 1e-4));
  }
  // mHC init (spec §8): zero logits give the uniform doubly stochastic J/n.
  const int n = 4;
  cuda::DeviceBuffer<float> zeros(n * n), out(n * n);
  zeros.zero();
  sinkhorn_forward(cuda::cuda_memory_space(), out.data(), zeros.data(), {1, n, 20, 1e-6});
  for (float x : out.download()) BOOST_TEST(std::fabs(x - 0.25f) < 1e-5f);
}
