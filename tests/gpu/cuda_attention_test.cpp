// The fused CUDA attention (forward and backward) against the CPU attention, for every
// head_dim of the suites (34–128, including 38, 50, 70, 76 that are not multiples of 8), GQA,
// and sequence lengths that are not multiples of the 64-row tile.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE cuda_attention
#include <boost/mpl/list.hpp>
#include <boost/test/unit_test.hpp>

#include "gpu/gpu_support.hpp"
#include "ops/cpu/attention.hpp"
#include "ops/cuda/attention.hpp"

using namespace db;
using namespace db::test;
using Vec = std::vector<float>;
using ElementTypes = boost::mpl::list<float, cuda::bf16>;

namespace {

template <class T>
void check_attention(const cpu::AttentionShape& s) {
  const size_t q_size = size_t(s.batch) * s.seq_len * s.heads * s.head_dim;
  const size_t kv_size = size_t(s.batch) * s.seq_len * s.kv_heads * s.head_dim;
  const Vec q = as_input<T>(random_floats(q_size, 1));
  const Vec k = as_input<T>(random_floats(kv_size, 2));
  const Vec v = as_input<T>(random_floats(kv_size, 3));
  const Vec d_o = as_input<T>(random_floats(q_size, 4));
  Vec o(q_size), lse(size_t(s.batch) * s.heads * s.seq_len), dq(q_size), dk(kv_size), dv(kv_size);
  cpu::attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), s);
  // The backward is fed the GPU's own (rounded) output in bf16 mode, as in training; the CPU
  // reference gets the same values.
  auto q_d = to_device<T>(q), k_d = to_device<T>(k), v_d = to_device<T>(v);
  auto do_d = to_device<T>(d_o);
  cuda::DeviceBuffer<T> o_d(q_size), dq_d(q_size), dk_d(kv_size), dv_d(kv_size);
  cuda::DeviceBuffer<float> lse_d(lse.size());
  cuda::attention_forward(o_d.data(), lse_d.data(), q_d.data(), k_d.data(), v_d.data(), s);
  const Vec o_gpu = to_host(o_d);
  cpu::attention_backward(dq.data(), dk.data(), dv.data(), d_o.data(), o_gpu.data(), lse.data(),
                          q.data(), k.data(), v.data(), s);
  cuda::attention_backward(dq_d.data(), dk_d.data(), dv_d.data(), do_d.data(), o_d.data(),
                           lse_d.data(), q_d.data(), k_d.data(), v_d.data(), s);
  std::printf(" attention %s B=%lld T=%d H=%d H_kv=%d hd=%d\n",
              std::is_same_v<T, float> ? "fp32" : "bf16", (long long)s.batch, s.seq_len, s.heads,
              s.kv_heads, s.head_dim);
  // Softmax and accumulation run in fp32 in both modes; bf16 mode rounds o, dq, dk, dv once.
  BOOST_TEST(within("o", relative_error(o_gpu, o), tolerance<T>()));
  BOOST_TEST(within("lse", relative_error(lse_d.download(), lse), kFp32Tolerance));
  // dq and dk are measured against at least the size of dv: over one key (T = 1) the softmax is
  // 1, dS = P∘(dP − D) vanishes, and both sides hold only the rounding of dP − D, which the GPU's
  // and the CPU's sums leave in different bits (found by the first run, on the emulated device).
  double dv_size = 0;
  for (float x : dv) dv_size = std::max(dv_size, std::fabs(double(x)));
  BOOST_TEST(within("dq", relative_error(to_host(dq_d), dq, dv_size), tolerance<T>()));
  BOOST_TEST(within("dk", relative_error(to_host(dk_d), dk, dv_size), tolerance<T>()));
  BOOST_TEST(within("dv", relative_error(to_host(dv_d), dv), tolerance<T>()));
}

}  // namespace

BOOST_AUTO_TEST_CASE_TEMPLATE(attention_matches_cpu_for_every_suite_head_dim, T, ElementTypes) {
  DB_REQUIRE_GPU();
  const int64_t batch = on_emulated_device() ? 1 : 2;  // the emulated device: half the work
  for (int hd : {34, 38, 50, 64, 70, 76, 128}) check_attention<T>({batch, 100, 4, 4, hd});
}

BOOST_AUTO_TEST_CASE_TEMPLATE(attention_matches_cpu_with_grouped_query_heads, T, ElementTypes) {
  DB_REQUIRE_GPU();
  check_attention<T>({2, 130, 16, 8, 64});  // Qwen3-1.7B grouping: 2 query heads per kv head
  check_attention<T>({1, 77, 8, 2, 70});
  check_attention<T>({1, 65, 4, 1, 38});  // multi-query
}

BOOST_AUTO_TEST_CASE_TEMPLATE(attention_matches_cpu_at_tile_edges, T, ElementTypes) {
  DB_REQUIRE_GPU();
  for (int Tn : {1, 2, 63, 64, 65, 128, 129, 300}) check_attention<T>({1, Tn, 2, 2, 50});
}
