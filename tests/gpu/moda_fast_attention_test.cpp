// MoDA through the fast attention (ops/cuda/attention_paths.hpp, doc/cuda.md "MoDA through the
// fast attention"): the sequence part through cuDNN or our flash kernel, the depth entries merged
// through the log-sum-exp (moda_depth_merge.hpp), against the MoDA reference kernel
// (moda_attention.hpp, fp32) on the same bf16-rounded inputs: o, lse, dq, dk, dv and the depth
// gradients, for GQA, multi-query, a head dim that cuDNN pads (76), T off the 64-row tile and
// no depth entry at all; the backward twice, bit for bit. The merge kernels alone (after the
// fp32 reference attention) against the MoDA kernel in fp32. And the path report of the run file.
//
// Bounds (doc/cuda.md "Tolerances"): o, dq, dk, dv, d_depth_k, d_depth_v 1.6e-2 (bf16: the fast
// paths round P, dS and their outputs to bf16); lse 1e-4 (fp32 in both); the fp32 merge 1e-5.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE moda_fast_attention
#include <boost/test/unit_test.hpp>
#include <string>

#include "gpu/gpu_support.hpp"
#include "ops/cuda/attention.hpp"
#include "ops/cuda/attention_paths.hpp"
#include "ops/cuda/moda_attention.hpp"
#include "ops/cuda/moda_depth_merge.hpp"

using namespace db;
using namespace db::test;
using Vec = std::vector<float>;

namespace {

constexpr double kLseTolerance = 1e-4;

struct Inputs {
  Vec q, k, v, depth_k, depth_v, d_o, d_depth_k, d_depth_v;  // d_depth_*: the starting values
  Inputs(const ModaShape& s, uint64_t seed) {
    const size_t q_size = size_t(s.batch) * s.seq_len * s.heads * s.head_dim;
    const size_t kv_size = size_t(s.batch) * s.seq_len * s.kv_heads * s.head_dim;
    const size_t depth_size = kv_size * s.depth_stride;
    // bf16-representable: every path starts from the same values.
    q = rounded_bf16(random_floats(q_size, seed));
    k = rounded_bf16(random_floats(kv_size, seed + 1));
    v = rounded_bf16(random_floats(kv_size, seed + 2));
    depth_k = rounded_bf16(random_floats(depth_size, seed + 3));
    depth_v = rounded_bf16(random_floats(depth_size, seed + 4));
    d_o = rounded_bf16(random_floats(q_size, seed + 5));
    d_depth_k = random_floats(depth_size, seed + 6);  // both add to them
    d_depth_v = random_floats(depth_size, seed + 7);
  }
};

struct Outputs {
  Vec o, lse, dq, dk, dv, d_depth_k, d_depth_v;
};

// One MoDA forward and backward through `paths`. The backward gets `o_for_backward` when given
// (so that both paths see the same O, as the attention tests do), else its own.
Outputs run(cuda::AttentionPaths& paths, const ModaShape& s, const Inputs& in,
            const Vec* o_for_backward = nullptr) {
  auto q = to_device<float>(in.q), k = to_device<float>(in.k), v = to_device<float>(in.v);
  auto depth_k = to_device<float>(in.depth_k), depth_v = to_device<float>(in.depth_v);
  auto d_o = to_device<float>(in.d_o);
  auto d_depth_k = to_device<float>(in.d_depth_k), d_depth_v = to_device<float>(in.d_depth_v);
  cuda::DeviceBuffer<float> o(in.q.size()), dq(in.q.size()), dk(in.k.size()), dv(in.k.size());
  cuda::DeviceBuffer<float> lse(size_t(s.batch) * s.heads * s.seq_len);
  paths.moda_forward(o.data(), lse.data(), q.data(), k.data(), v.data(), depth_k.data(),
                     depth_v.data(), s, nullptr);
  Outputs out;
  out.o = o.download();
  out.lse = lse.download();
  if (o_for_backward) o.upload(*o_for_backward);
  paths.moda_backward(dq.data(), dk.data(), dv.data(), d_depth_k.data(), d_depth_v.data(),
                      d_o.data(), o.data(), lse.data(), q.data(), k.data(), v.data(),
                      depth_k.data(), depth_v.data(), s, nullptr);
  out.dq = dq.download();
  out.dk = dk.download();
  out.dv = dv.download();
  out.d_depth_k = d_depth_k.download();
  out.d_depth_v = d_depth_v.download();
  return out;
}

bool all_within(const std::string& tag, const Outputs& a, const Outputs& b, double bound,
                double lse_bound) {
  bool ok = within((tag + " o").c_str(), relative_error(a.o, b.o), bound);
  ok &= within((tag + " lse").c_str(), relative_error(a.lse, b.lse), lse_bound);
  ok &= within((tag + " dq").c_str(), relative_error(a.dq, b.dq), bound);
  ok &= within((tag + " dk").c_str(), relative_error(a.dk, b.dk), bound);
  ok &= within((tag + " dv").c_str(), relative_error(a.dv, b.dv), bound);
  ok &= within((tag + " d_depth_k").c_str(), relative_error(a.d_depth_k, b.d_depth_k), bound);
  ok &= within((tag + " d_depth_v").c_str(), relative_error(a.d_depth_v, b.d_depth_v), bound);
  return ok;
}

std::string describe(const ModaShape& s) {
  return "B=" + std::to_string(s.batch) + " T=" + std::to_string(s.seq_len) +
         " H=" + std::to_string(s.heads) + " H_kv=" + std::to_string(s.kv_heads) +
         " hd=" + std::to_string(s.head_dim);
}

void check_fast_moda(const ModaShape& s, uint64_t seed) {
  const Inputs in(s, seed);
  std::printf(" moda %s depth=%d/%d\n", describe(s).c_str(), s.depth, s.depth_stride);
  const AttentionShape seq{s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim};
  for (AttentionPath path : {AttentionPath::cudnn, AttentionPath::flash}) {
    cuda::AttentionPaths fast_paths(path, Precision::bf16);
    try {
      fast_paths.path_for(seq);  // plans the shape once (cuDNN: seconds)
    } catch (const Error& e) {
      std::printf("  %s does not run this shape: %s\n", attention_path_name(path), e.what());
      continue;
    }
    cuda::AttentionPaths reference(AttentionPath::reference, Precision::bf16);
    const Outputs fast = run(fast_paths, s, in);
    const Outputs ref = run(reference, s, in, &fast.o);
    BOOST_TEST(all_within(attention_path_name(path), fast, ref, kBf16Tolerance, kLseTolerance));
    // Deterministic: no atomics in the fast paths nor in the merge.
    const Outputs again = run(fast_paths, s, in);
    BOOST_TEST((again.dq == fast.dq && again.dk == fast.dk && again.dv == fast.dv &&
                again.d_depth_k == fast.d_depth_k && again.d_depth_v == fast.d_depth_v),
               "backward repeated gives other bits");
    // The run file's report names MoDA's shape with the path that ran it.
    const std::string report = fast_paths.report();
    BOOST_TEST_INFO(report);
    BOOST_TEST(report.find("moda " + describe(s) + ": " + attention_path_name(path)) !=
               std::string::npos);
    BOOST_TEST(reference.report() == "moda " + describe(s) + ": reference");
  }
}

// The merge kernels in fp32 after the fp32 reference attention: the MoDA kernel's results up to
// the order of additions.
void check_merge_in_fp32(const ModaShape& s, uint64_t seed) {
  const Inputs in(s, seed);
  const AttentionShape seq{s.batch, s.seq_len, s.heads, s.kv_heads, s.head_dim};
  auto q = to_device<float>(in.q), k = to_device<float>(in.k), v = to_device<float>(in.v);
  auto depth_k = to_device<float>(in.depth_k), depth_v = to_device<float>(in.depth_v);
  auto d_o = to_device<float>(in.d_o);
  const size_t lse_size = size_t(s.batch) * s.heads * s.seq_len;
  Outputs merged, ref;
  for (bool use_merge : {true, false}) {
    auto d_depth_k = to_device<float>(in.d_depth_k), d_depth_v = to_device<float>(in.d_depth_v);
    cuda::DeviceBuffer<float> o(in.q.size()), dq(in.q.size()), dk(in.k.size()), dv(in.k.size());
    cuda::DeviceBuffer<float> lse(lse_size);
    if (use_merge) {
      cuda::attention_forward<float>(o.data(), lse.data(), q.data(), k.data(), v.data(), seq);
      cuda::moda_depth_merge_forward(o.data(), lse.data(), q.data(), depth_k.data(), depth_v.data(),
                                     s, nullptr);
      cuda::attention_backward<float>(dq.data(), dk.data(), dv.data(), d_o.data(), o.data(),
                                      lse.data(), q.data(), k.data(), v.data(), seq);
      cuda::moda_depth_merge_backward(dq.data(), d_depth_k.data(), d_depth_v.data(), d_o.data(),
                                      o.data(), lse.data(), q.data(), depth_k.data(),
                                      depth_v.data(), s, nullptr);
    } else {
      cuda::moda_attention_forward(o.data(), lse.data(), q.data(), k.data(), v.data(),
                                   depth_k.data(), depth_v.data(), s, nullptr);
      cuda::moda_attention_backward(dq.data(), dk.data(), dv.data(), d_depth_k.data(),
                                    d_depth_v.data(), d_o.data(), o.data(), lse.data(), q.data(),
                                    k.data(), v.data(), depth_k.data(), depth_v.data(), s, nullptr);
    }
    Outputs& out = use_merge ? merged : ref;
    out = {o.download(),  lse.download(),       dq.download(),       dk.download(),
           dv.download(), d_depth_k.download(), d_depth_v.download()};
  }
  std::printf(" fp32 merge B=%lld T=%d H=%d H_kv=%d hd=%d depth=%d/%d\n", (long long)s.batch,
              s.seq_len, s.heads, s.kv_heads, s.head_dim, s.depth, s.depth_stride);
  BOOST_TEST(all_within("merge", merged, ref, kFp32Tolerance, kFp32Tolerance));
}

}  // namespace

BOOST_AUTO_TEST_CASE(merge_kernels_match_the_moda_kernel_in_fp32) {
  DB_REQUIRE_GPU();
  check_merge_in_fp32({2, 70, 4, 2, 64, 6, 8}, 10);
  check_merge_in_fp32({1, 33, 4, 1, 50, 3, 3}, 20);
  check_merge_in_fp32({1, 20, 2, 2, 128, 46, 46}, 30);  // the deepest block of L = 24
}

BOOST_AUTO_TEST_CASE(fast_moda_matches_the_reference_with_grouped_query_heads) {
  DB_REQUIRE_GPU();
  check_fast_moda({2, 100, 4, 2, 64, 6, 8}, 100);  // 6 of 8 stored entries read
  check_fast_moda({1, 130, 16, 8, 64, 22, 46}, 200);
  check_fast_moda({1, 65, 4, 1, 40, 4, 4}, 300);  // multi-query
}

BOOST_AUTO_TEST_CASE(fast_moda_matches_the_reference_for_padded_head_dims_and_tile_edges) {
  DB_REQUIRE_GPU();
  check_fast_moda({1, 77, 4, 2, 76, 5, 6}, 400);
  check_fast_moda({1, 129, 2, 1, 128, 3, 4}, 600);
  check_fast_moda({1, 64, 2, 2, 64, 0, 2}, 700);  // block 0: no depth entry, plain attention
}

// Needs no GPU: nothing is planned for the reference path, and the report lists each shape once.
BOOST_AUTO_TEST_CASE(the_report_lists_the_path_of_each_shape) {
  cuda::AttentionPaths paths(AttentionPath::automatic, Precision::fp32);
  BOOST_TEST(paths.report() == "none");
  paths.path_for({8, 2048, 16, 8, 64});
  paths.path_for({1, 2048, 16, 8, 64});
  paths.path_for({8, 2048, 16, 8, 64});
  BOOST_TEST(paths.report() ==
             "B=1 T=2048 H=16 H_kv=8 hd=64: reference; B=8 T=2048 H=16 H_kv=8 hd=64: reference");
}
