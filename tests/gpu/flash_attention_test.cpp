// The tensor-core flash attention (ops/cuda/flash_attention.hpp, bf16) against the reference
// CUDA attention (ops/cuda/attention.hpp) run in fp32 on the same bf16-rounded inputs: forward
// (o, lse) and backward (dq, dk, dv), for head dims 40, 64, 76 (padded to 64, 64, 80) and 128,
// sequence lengths 1, 63, 200 (not multiples of the 64-row tile) and 1024, GQA (8 query heads
// on 2 kv heads) and MHA; the backward repeated must give the same bits.
//
// Bounds (doc/cuda.md "Tolerances", error = max |flash − ref| / max |ref|):
//   o, dq, dk, dv  1.6e-2 (bf16): flash rounds P (forward, dV) and dS (dK, dQ) to bf16 for the
//                  tensor cores and its outputs once more; the reference keeps them in fp32.
//   lse            1e-4: fp32 in both, from the same bf16 products; only the tensor cores'
//                  accumulation order and rounding differ.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE flash_attention
#include "ops/cuda/flash_attention.hpp"

#include <boost/test/unit_test.hpp>
#include <cstring>

#include "gpu/gpu_support.hpp"
#include "ops/cuda/attention.hpp"

using namespace db;
using namespace db::test;
using Vec = std::vector<float>;
using cuda::bf16;
using cuda::DeviceBuffer;

namespace {

constexpr double kLseTolerance = 1e-4;

bool same_bits(const DeviceBuffer<bf16>& a, const DeviceBuffer<bf16>& b) {
  const std::vector<bf16> x = a.download(), y = b.download();
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(bf16)) == 0;
}

void check_flash(const AttentionShape& s, uint64_t seed) {
  const size_t q_size = size_t(s.batch) * s.seq_len * s.heads * s.head_dim;
  const size_t kv_size = size_t(s.batch) * s.seq_len * s.kv_heads * s.head_dim;
  const size_t lse_size = size_t(s.batch) * s.heads * s.seq_len;
  const Vec q = rounded_bf16(random_floats(q_size, seed));
  const Vec k = rounded_bf16(random_floats(kv_size, seed + 1));
  const Vec v = rounded_bf16(random_floats(kv_size, seed + 2));
  const Vec d_o = rounded_bf16(random_floats(q_size, seed + 3));
  std::printf(" flash attention B=%lld T=%d H=%d H_kv=%d hd=%d\n", (long long)s.batch, s.seq_len,
              s.heads, s.kv_heads, s.head_dim);

  // Forward: the reference in fp32, flash in bf16, on the same values.
  auto q32 = to_device<float>(q), k32 = to_device<float>(k), v32 = to_device<float>(v);
  auto do32 = to_device<float>(d_o);
  DeviceBuffer<float> o_ref(q_size), lse_ref(lse_size);
  cuda::attention_forward(o_ref.data(), lse_ref.data(), q32.data(), k32.data(), v32.data(), s);
  auto q16 = to_device<bf16>(q), k16 = to_device<bf16>(k), v16 = to_device<bf16>(v);
  auto do16 = to_device<bf16>(d_o);
  DeviceBuffer<bf16> o(q_size);
  DeviceBuffer<float> lse(lse_size);
  cuda::flash_attention_forward(o.data(), lse.data(), q16.data(), k16.data(), v16.data(), s,
                                nullptr);
  const Vec o_flash = to_host(o);
  BOOST_TEST(within("o", relative_error(o_flash, o_ref.download()), kBf16Tolerance));
  BOOST_TEST(within("lse", relative_error(lse.download(), lse_ref.download()), kLseTolerance));

  // Backward: both are given flash's (bf16) output, as in training; each its own lse.
  auto o32 = to_device<float>(o_flash);
  DeviceBuffer<float> dq_ref(q_size), dk_ref(kv_size), dv_ref(kv_size);
  cuda::attention_backward(dq_ref.data(), dk_ref.data(), dv_ref.data(), do32.data(), o32.data(),
                           lse_ref.data(), q32.data(), k32.data(), v32.data(), s);
  DeviceBuffer<bf16> dq(q_size), dk(kv_size), dv(kv_size);
  cuda::flash_attention_backward(dq.data(), dk.data(), dv.data(), do16.data(), o.data(), lse.data(),
                                 q16.data(), k16.data(), v16.data(), s, nullptr);
  BOOST_TEST(within("dq", relative_error(to_host(dq), dq_ref.download()), kBf16Tolerance));
  BOOST_TEST(within("dk", relative_error(to_host(dk), dk_ref.download()), kBf16Tolerance));
  BOOST_TEST(within("dv", relative_error(to_host(dv), dv_ref.download()), kBf16Tolerance));

  // Deterministic: no atomics, fixed summation order.
  DeviceBuffer<bf16> dq2(q_size), dk2(kv_size), dv2(kv_size);
  cuda::flash_attention_backward(dq2.data(), dk2.data(), dv2.data(), do16.data(), o.data(),
                                 lse.data(), q16.data(), k16.data(), v16.data(), s, nullptr);
  BOOST_TEST((same_bits(dq, dq2) && same_bits(dk, dk2) && same_bits(dv, dv2)),
             "backward repeated gives other bits");
}

}  // namespace

// Runs without a GPU: the shape check is host code.
BOOST_AUTO_TEST_CASE(flash_supports_every_suite_shape_and_rejects_others) {
  for (int hd : {40, 50, 56, 60, 64, 70, 76, 128})
    BOOST_TEST(cuda::flash_attention_supports({8, 2048, 16, 16, hd}));
  BOOST_TEST(cuda::flash_attention_supports({8, 2048, 16, 8, 128}));  // the 1.6B GQA shape
  BOOST_TEST(!cuda::flash_attention_supports({1, 64, 4, 4, 129}));    // head_dim > 128
  BOOST_TEST(!cuda::flash_attention_supports({1, 64, 6, 4, 64}));     // 6 % 4 ≠ 0
  BOOST_TEST(!cuda::flash_attention_supports({1, 64, 4, 0, 64}));
  BOOST_TEST(!cuda::flash_attention_supports({4096, 64, 16, 16, 64}));  // grid.y ≥ 65536
}

BOOST_AUTO_TEST_CASE(flash_matches_reference_for_every_head_dim_and_length) {
  DB_REQUIRE_GPU();
  uint64_t seed = 100;
  // On the emulated device (every access checked on the host) one sequence per batch and no
  // 1024: 200 keys already run four 64-key tiles, a partial one among them.
  const std::vector<int> lengths =
      on_emulated_device() ? std::vector<int>{1, 63, 200} : std::vector<int>{1, 63, 200, 1024};
  for (int hd : {40, 64, 76, 128})
    for (int T : lengths) {
      const int64_t batch = T >= 1024 || on_emulated_device() ? 1 : 2;
      check_flash({batch, T, 8, 2, hd}, seed += 10);  // GQA: 4 query heads per kv head
      check_flash({batch, T, 4, 4, hd}, seed += 10);  // MHA
    }
}

BOOST_AUTO_TEST_CASE(flash_matches_reference_at_tile_edges) {
  DB_REQUIRE_GPU();
  for (int T : {2, 15, 16, 17, 64, 65, 127, 128, 129}) check_flash({1, T, 2, 1, 50}, 7000 + T);
  check_flash({1, 65, 2, 2, 33}, 7500);  // odd head_dim: 2-byte global loads
}
