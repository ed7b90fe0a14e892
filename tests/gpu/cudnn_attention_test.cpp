// The attention paths of the CUDA ops (train.attention, ops/cuda/attention_paths.hpp): cuDNN's
// fused SDPA against the reference kernel (attention.hpp, fp32) on the same bf16-rounded fresh
// random inputs, forward (o, lse) and backward (dq, dk, dv), for head dims of the suites that are
// and are not multiples of 8 (40, 50, 64, 70, 76, 128), GQA and multi-query, and T off the 64-row
// tile; the backward twice, bit for bit (the deterministic variant); cuDNN against our flash
// kernel where that runs the shape. Also: how `auto` chooses, and how it moves a shape to flash
// when cuDNN fails to run it.
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE cudnn_attention
#include "ops/cuda/cudnn_attention.hpp"

#include <boost/test/unit_test.hpp>

#include "gpu/gpu_support.hpp"
#include "ops/cuda/attention_paths.hpp"
#include "ops/cuda/flash_attention.hpp"

using namespace db;
using namespace db::test;
using Vec = std::vector<float>;

namespace {

struct Outputs {
  Vec o, lse, dq, dk, dv;
};

// One forward and backward through `paths` on device copies of the host inputs. The backward
// gets the cuDNN path's output `o_for_backward` when given (so both paths see the same O), else
// its own.
Outputs run(cuda::AttentionPaths& paths, const AttentionShape& s, const Vec& q, const Vec& k,
            const Vec& v, const Vec& d_o, const Vec* o_for_backward = nullptr) {
  const size_t q_size = q.size(), kv_size = k.size();
  auto q_d = to_device<float>(q), k_d = to_device<float>(k), v_d = to_device<float>(v);
  auto do_d = to_device<float>(d_o);
  cuda::DeviceBuffer<float> o_d(q_size), dq_d(q_size), dk_d(kv_size), dv_d(kv_size);
  cuda::DeviceBuffer<float> lse_d(size_t(s.batch) * s.heads * s.seq_len);
  paths.forward(o_d.data(), lse_d.data(), q_d.data(), k_d.data(), v_d.data(), s, nullptr);
  Outputs out{o_d.download(), lse_d.download(), {}, {}, {}};
  if (o_for_backward) o_d.upload(*o_for_backward);
  paths.backward(dq_d.data(), dk_d.data(), dv_d.data(), do_d.data(), o_d.data(), lse_d.data(),
                 q_d.data(), k_d.data(), v_d.data(), s, nullptr);
  out.dq = dq_d.download();
  out.dk = dk_d.download();
  out.dv = dv_d.download();
  return out;
}

// q, k, v and dO of shape s, bf16-representable: every path then starts from the same values.
struct Inputs {
  Vec q, k, v, d_o;
};
Inputs random_inputs(const AttentionShape& s, uint64_t seed) {
  const size_t q_size = size_t(s.batch) * s.seq_len * s.heads * s.head_dim;
  const size_t kv_size = size_t(s.batch) * s.seq_len * s.kv_heads * s.head_dim;
  return {rounded_bf16(random_floats(q_size, seed)), rounded_bf16(random_floats(kv_size, seed + 1)),
          rounded_bf16(random_floats(kv_size, seed + 2)),
          rounded_bf16(random_floats(q_size, seed + 3))};
}

void check_cudnn_against_reference(const AttentionShape& s) {
  const auto [q, k, v, d_o] = random_inputs(s, 11);
  cuda::AttentionPaths cudnn(AttentionPath::cudnn, Precision::bf16);
  cuda::AttentionPaths reference(AttentionPath::reference, Precision::bf16);
  const Outputs fast = run(cudnn, s, q, k, v, d_o);
  const Outputs ref = run(reference, s, q, k, v, d_o, &fast.o);
  std::printf(" cudnn attention B=%lld T=%d H=%d H_kv=%d hd=%d\n", (long long)s.batch, s.seq_len,
              s.heads, s.kv_heads, s.head_dim);
  // o, dq, dk, dv are bf16 outputs (P and dS are rounded to bf16 for the tensor-core products);
  // lse is fp32 from fp32 scores of bf16 products.
  BOOST_TEST(within("o", relative_error(fast.o, ref.o), kBf16Tolerance));
  BOOST_TEST(within("lse", relative_error(fast.lse, ref.lse), kFp32Tolerance * 10));
  BOOST_TEST(within("dq", relative_error(fast.dq, ref.dq), kBf16Tolerance));
  BOOST_TEST(within("dk", relative_error(fast.dk, ref.dk), kBf16Tolerance));
  BOOST_TEST(within("dv", relative_error(fast.dv, ref.dv), kBf16Tolerance));
  // The deterministic backward: the same inputs give the same bits.
  const Outputs again = run(cudnn, s, q, k, v, d_o);
  BOOST_TEST((again.dq == fast.dq && again.dk == fast.dk && again.dv == fast.dv));
  // The two bf16 paths against each other, where our flash kernel runs the shape: each is
  // within the bf16 bound of the reference, so of each other within twice that.
  if (cuda::flash_attention_supports(s)) {
    cuda::AttentionPaths flash(AttentionPath::flash, Precision::bf16);
    const Outputs other = run(flash, s, q, k, v, d_o, &fast.o);
    BOOST_TEST(within("flash o", relative_error(other.o, fast.o), 2 * kBf16Tolerance));
    BOOST_TEST(within("flash lse", relative_error(other.lse, fast.lse), kFp32Tolerance * 10));
    BOOST_TEST(within("flash dq", relative_error(other.dq, fast.dq), 2 * kBf16Tolerance));
    BOOST_TEST(within("flash dk", relative_error(other.dk, fast.dk), 2 * kBf16Tolerance));
    BOOST_TEST(within("flash dv", relative_error(other.dv, fast.dv), 2 * kBf16Tolerance));
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(cudnn_matches_the_reference_for_suite_head_dims) {
  DB_REQUIRE_GPU();
  for (int hd : {40, 50, 64, 70, 76, 128}) check_cudnn_against_reference({2, 100, 4, 4, hd});
}

BOOST_AUTO_TEST_CASE(cudnn_matches_the_reference_with_grouped_query_heads) {
  DB_REQUIRE_GPU();
  check_cudnn_against_reference({1, 130, 16, 8, 64});  // 2 query heads per kv head
  check_cudnn_against_reference({1, 77, 8, 2, 76});
  check_cudnn_against_reference({1, 65, 4, 1, 40});  // multi-query
}

BOOST_AUTO_TEST_CASE(cudnn_matches_the_reference_off_the_tile_edges) {
  DB_REQUIRE_GPU();
  for (int T : {2, 63, 129, 300})
    check_cudnn_against_reference({1, T, 2, 2, 64});  // T ≥ 2 in training
}

// Parity runs stay fp32: auto never leaves the reference kernel when the products are fp32.
// Needs no GPU (nothing is planned).
BOOST_AUTO_TEST_CASE(auto_runs_the_reference_in_fp32) {
  cuda::AttentionPaths paths(AttentionPath::automatic, Precision::fp32);
  BOOST_TEST((paths.path_for({8, 2048, 16, 16, 64}) == AttentionPath::reference));
}

// With bf16 products auto takes cuDNN where it plans the shape; without a GPU (or cuDNN) it
// notes why and falls back — to the reference here, where the flash kernel is not built.
BOOST_AUTO_TEST_CASE(auto_falls_back_when_cudnn_cannot_run) {
  cuda::AttentionPaths paths(AttentionPath::automatic, Precision::bf16);
  const AttentionPath chosen = paths.path_for({1, 64, 2, 2, 64});
  if (cuda::cuda_available())
    BOOST_TEST_MESSAGE("auto chose " << attention_path_name(chosen));
  else
    BOOST_TEST((chosen != AttentionPath::cudnn));
}

// Without a GPU, cuDNN (when its library loads) still checks every tensor and operation
// descriptor of the graphs as they are finalised: the only refusal left must be the missing
// device (the handle), for plain, grouped, multi-query and padded-head shapes.
BOOST_AUTO_TEST_CASE(cudnn_accepts_the_graph_descriptors_without_a_gpu) {
  if (cuda::cuda_available()) {
    BOOST_TEST_MESSAGE("a GPU: the parity cases plan the graphs");
    return;
  }
  for (const AttentionShape& s : std::vector<AttentionShape>{
           {2, 100, 4, 4, 64}, {1, 130, 16, 8, 64}, {1, 77, 8, 2, 76}, {1, 65, 4, 1, 50}}) {
    cuda::AttentionPaths paths(AttentionPath::cudnn, Precision::bf16);
    try {
      paths.path_for(s);
      BOOST_FAIL("cuDNN planned a graph without a GPU");
    } catch (const Error& e) {
      const std::string message = e.what();
      if (message.find("cuDNN unavailable") != std::string::npos) {
        BOOST_TEST_MESSAGE("no cuDNN library here: " << message);
        return;
      }
      BOOST_TEST_INFO(message);
      BOOST_TEST(message.find("lib.Create") != std::string::npos);
    }
  }
}

// One plan cache per process and device: a second ops object (another model, test case or
// sweep run) finds the shape's plans (or its refusal) and builds no graph again. Runs with and
// without a GPU: without one the cached entry is the refusal at the handle.
BOOST_AUTO_TEST_CASE(a_shape_is_planned_once_per_process_whatever_the_number_of_ops_objects) {
  const AttentionShape s{1, 96, 4, 2, 64};
  const int64_t before = cuda::CudnnAttention::graph_builds_in_process();
  std::string first, second;
  {
    cuda::CudnnAttention a;
    first = a.prepare(s);
  }
  if (first.find("cuDNN unavailable") != std::string::npos) {
    BOOST_TEST_MESSAGE("no cuDNN library here: " << first);
    return;
  }
  cuda::CudnnAttention b;  // the first object is gone: its plans live on in the process
  second = b.prepare(s);
  BOOST_TEST(second == first);
  BOOST_TEST(cuda::CudnnAttention::graph_builds_in_process() == before + 1);
  cuda::CudnnAttention c;
  const AttentionShape other_batch{2, 96, 4, 2, 64};  // another shape: planned on its own
  c.prepare(other_batch);
  BOOST_TEST(cuda::CudnnAttention::graph_builds_in_process() == before + 2);
}

// An explicit cudnn that cannot run is an error naming the reason, not a silent fallback.
BOOST_AUTO_TEST_CASE(an_explicit_path_that_cannot_run_is_an_error) {
  if (!cuda::cuda_available()) {
    cuda::AttentionPaths paths(AttentionPath::cudnn, Precision::bf16);
    BOOST_CHECK_EXCEPTION(paths.path_for({1, 64, 2, 2, 64}), Error, [](const Error& e) {
      BOOST_TEST_MESSAGE(e.what());
      return std::string(e.what()).find("train.attention = cudnn: ") == 0;
    });
  }
  cuda::AttentionPaths flash(AttentionPath::flash, Precision::bf16);
  const AttentionShape huge{1, 64, 2, 2, 512};  // beyond every flash kernel's head dim
  BOOST_CHECK_THROW(flash.path_for(huge), Error);
}

// A shape cuDNN planned but fails to run moves to our flash kernel under auto, at the failing
// call: a forward, and a backward that gets the O and lse of cuDNN's forward. The results are
// flash's bit for bit, and the report says why; an explicit cudnn keeps the error.
BOOST_AUTO_TEST_CASE(auto_moves_a_shape_to_flash_when_cudnn_fails_to_run_it) {
  DB_REQUIRE_GPU();
  const AttentionShape s{2, 100, 4, 2, 64};
  if (!cuda::flash_attention_supports(s)) {
    BOOST_TEST_MESSAGE("flash kernel not built: nothing to fall back to");
    return;
  }
  const auto [q, k, v, d_o] = random_inputs(s, 41);
  const size_t q_size = q.size(), kv_size = k.size();
  cuda::AttentionPaths flash(AttentionPath::flash, Precision::bf16);
  const Outputs expected = run(flash, s, q, k, v, d_o);

  cuda::AttentionPaths paths(AttentionPath::automatic, Precision::bf16);
  if (paths.path_for(s) != AttentionPath::cudnn) {
    BOOST_TEST_MESSAGE("auto did not take cuDNN here: " << paths.report());
    return;
  }
  paths.fail_cudnn_executions_for_test();
  const Outputs fell_back = run(paths, s, q, k, v, d_o);
  BOOST_TEST((paths.path_for(s) == AttentionPath::flash));
  BOOST_TEST(paths.report().find("cuDNN failed to run") != std::string::npos);
  BOOST_TEST((fell_back.o == expected.o && fell_back.lse == expected.lse));
  BOOST_TEST(
      (fell_back.dq == expected.dq && fell_back.dk == expected.dk && fell_back.dv == expected.dv));

  // The backward alone: cuDNN's forward ran, its execution fails from the backward on.
  cuda::AttentionPaths late(AttentionPath::automatic, Precision::bf16);
  auto q_d = to_device<float>(q), k_d = to_device<float>(k), v_d = to_device<float>(v);
  auto do_d = to_device<float>(d_o);
  cuda::DeviceBuffer<float> o_d(q_size), dq_d(q_size), dk_d(kv_size), dv_d(kv_size);
  cuda::DeviceBuffer<float> lse_d(size_t(s.batch) * s.heads * s.seq_len);
  late.forward(o_d.data(), lse_d.data(), q_d.data(), k_d.data(), v_d.data(), s, nullptr);
  late.fail_cudnn_executions_for_test();
  late.backward(dq_d.data(), dk_d.data(), dv_d.data(), do_d.data(), o_d.data(), lse_d.data(),
                q_d.data(), k_d.data(), v_d.data(), s, nullptr);
  cuda::DeviceBuffer<float> flash_dq(q_size), flash_dk(kv_size), flash_dv(kv_size);
  flash.backward(flash_dq.data(), flash_dk.data(), flash_dv.data(), do_d.data(), o_d.data(),
                 lse_d.data(), q_d.data(), k_d.data(), v_d.data(), s, nullptr);
  BOOST_TEST((dq_d.download() == flash_dq.download() && dk_d.download() == flash_dk.download() &&
              dv_d.download() == flash_dv.download()));

  cuda::AttentionPaths explicit_cudnn(AttentionPath::cudnn, Precision::bf16);
  explicit_cudnn.path_for(s);
  explicit_cudnn.fail_cudnn_executions_for_test();
  BOOST_CHECK_THROW(run(explicit_cudnn, s, q, k, v, d_o), Error);
}
