// The ops that got their CUDA kernels with the CUDA backend (ops/cuda/cuda_ops.cpp): MoDA
// attention, the deterministic embedding backward and the small copies — each through the CUDA ops
// object against the CPU ops object on fresh random inputs (fp32 bound of gpu_support.hpp), and the
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
