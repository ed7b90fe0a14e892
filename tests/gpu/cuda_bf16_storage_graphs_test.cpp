// The CUDA ops' bf16 storage (ops/cuda/cuda_bf16_storage.hpp) inside a captured micro-batch
// (train.cuda_graphs = on, ops/cuda/cuda_graph.hpp): one attention sublayer's worth of bf16
// storage calls — every StorageOps method, attention and MoDA on a fast path and on the widened
// reference — run through Ops::run_captured four times (eager, eager under the buffer watch,
// captured, replayed). A call that synchronises, reads back to the host or allocates model
// buffers inside the capture makes `on` throw; each run must give the eager run's bits, and the
// status must end `captured`. Without a GPU each case prints "no GPU: skipped".
#define BOOST_TEST_MODULE cuda_bf16_storage_graphs
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/bfloat16.hpp"
#include "gpu/gpu_support.hpp"
#include "ops/cuda/cuda_ops.hpp"

using namespace db;
using namespace db::test;
using cuda::DeviceBuffer;
using Bits = std::vector<uint32_t>;

namespace {

// Capture refuses the synchronisation after each launch that CUDA_LAUNCH_BLOCKING=1 (set by
// check.sh's ops stage for precise error locations) adds; read when the context is created (as
// in cuda_graphs_test; check.sh also runs this program without it).
const bool launch_blocking_off = (unsetenv("CUDA_LAUNCH_BLOCKING"), true);

constexpr int64_t kBatch = 2;
constexpr int kSeq = 40, kHeads = 4, kKvHeads = 2, kHeadDim = 32, kWidth = 64, kDepth = 2;
constexpr int64_t kRows = kBatch * kSeq;
constexpr int64_t kQ = kRows * kHeads * kHeadDim, kKv = kRows * kKvHeads * kHeadDim;
constexpr int64_t kDepthCount = kKv * kDepth;

// A device tensor with fixed random contents (bf16 or fp32).
template <class T>
DeviceBuffer<T> random_tensor(int64_t n, uint64_t seed, double scale = 1.0) {
  return to_device<T>(random_floats(size_t(n), seed, scale));
}

bfloat16* storage(DeviceBuffer<cuda::bf16>& b) {
  return reinterpret_cast<bfloat16*>(b.data());
}

template <class T>
Bits bits_of(const DeviceBuffer<T>& b) {
  const std::vector<T> host = b.download();
  Bits out(host.size());
  for (size_t i = 0; i < host.size(); ++i) {
    uint32_t u = 0;
    std::memcpy(&u, &host[i], sizeof(T));
    out[i] = u;
  }
  return out;
}

// The tensors of one micro-batch: inputs and weights fixed, outputs rewritten by every run
// (the added-to ones reset first from their start values, inside the recorded work).
struct Sublayer {
  using B16 = DeviceBuffer<cuda::bf16>;
  using F32 = DeviceBuffer<float>;
  F32 x_in = random_tensor<float>(kRows * kWidth, 1), gain = random_tensor<float>(kHeadDim, 2, 0.1);
  B16 W_q = random_tensor<cuda::bf16>(kHeads * kHeadDim * kWidth, 3, 0.2),
      W_k = random_tensor<cuda::bf16>(kKvHeads * kHeadDim * kWidth, 4, 0.2),
      W_v = random_tensor<cuda::bf16>(kKvHeads * kHeadDim * kWidth, 5, 0.2),
      W_o = random_tensor<cuda::bf16>(kWidth * kHeads * kHeadDim, 6, 0.2),
      depth_k = random_tensor<cuda::bf16>(kDepthCount, 7),
      depth_v = random_tensor<cuda::bf16>(kDepthCount, 8), d_o = random_tensor<cuda::bf16>(kQ, 9),
      zeros_depth = random_tensor<cuda::bf16>(kDepthCount, 10, 0.0),
      y_start = random_tensor<cuda::bf16>(kRows * kWidth, 11);
  F32 dW_start = random_tensor<float>(kHeads * kHeadDim * kWidth, 12),
      dgain_start = random_tensor<float>(kHeadDim, 13);
  // Outputs.
  B16 x{size_t(kRows * kWidth)}, q_pre{size_t(kQ)}, q{size_t(kQ)}, k{size_t(kKv)}, v{size_t(kKv)},
      o{size_t(kQ)}, o_moda{size_t(kQ)}, h{size_t(kQ)}, dq{size_t(kQ)}, dk{size_t(kKv)},
      dv{size_t(kKv)}, dq_moda{size_t(kQ)}, dk_moda{size_t(kKv)}, dv_moda{size_t(kKv)},
      d_depth_k{size_t(kDepthCount)}, d_depth_v{size_t(kDepthCount)}, dx{size_t(kRows * kWidth)},
      dq_pre{size_t(kQ)}, da{size_t(kQ)}, db{size_t(kQ)}, y{size_t(kRows * kWidth)},
      rows_out{size_t(kRows * kWidth)};
  F32 rstd{size_t(kRows * kHeads)}, lse{size_t(kRows * kHeads)}, lse_moda{size_t(kRows * kHeads)},
      y_wide{size_t(kRows * kWidth)}, dW{size_t(kHeads * kHeadDim * kWidth)},
      dx_wide{size_t(kRows * kWidth)}, dgain{size_t(kHeadDim)}, o_wide{size_t(kQ)};

  // The recorded work: forward and backward of a QK-normed, RoPE'd attention and MoDA.
  void enqueue(Ops<float>& ops, StorageOps<float, bfloat16>& st) {
    const AttentionShape s{kBatch, kSeq, kHeads, kKvHeads, kHeadDim};
    const ModaShape m{kBatch, kSeq, kHeads, kKvHeads, kHeadDim, kDepth, kDepth};
    st.narrow(storage(x), x_in.data(), kRows * kWidth);
    st.linear_forward(storage(q_pre), storage(x), storage(W_q), kRows, kWidth, kHeads * kHeadDim);
    st.linear_forward(storage(k), storage(x), storage(W_k), kRows, kWidth, kKvHeads * kHeadDim);
    st.linear_forward(storage(v), storage(x), storage(W_v), kRows, kWidth, kKvHeads * kHeadDim);
    st.rmsnorm_forward(storage(q), rstd.data(), storage(q_pre), gain.data(), kRows * kHeads,
                       kHeadDim, 1e-6);
    st.rope(storage(q), kBatch, kSeq, kHeads, kHeadDim, 10000.0, false);
    st.rope(storage(k), kBatch, kSeq, kKvHeads, kHeadDim, 10000.0, false);
    st.attention_forward(storage(o), lse.data(), storage(q), storage(k), storage(v), s);
    st.moda_attention_forward(storage(o_moda), lse_moda.data(), storage(q), storage(k), storage(v),
                              storage(depth_k), storage(depth_v), m);
    st.linear_forward_wide(y_wide.data(), storage(o), storage(W_o), kRows, kHeads * kHeadDim,
                           kWidth);
    st.swiglu_forward(storage(h), storage(q), storage(o), kQ);

    st.attention_backward(storage(dq), storage(dk), storage(dv), storage(d_o), storage(o),
                          lse.data(), storage(q), storage(k), storage(v), s);
    st.copy(storage(d_depth_k), storage(zeros_depth), kDepthCount);
    st.copy(storage(d_depth_v), storage(zeros_depth), kDepthCount);
    st.moda_attention_backward(storage(dq_moda), storage(dk_moda), storage(dv_moda),
                               storage(d_depth_k), storage(d_depth_v), storage(d_o),
                               storage(o_moda), lse_moda.data(), storage(q), storage(k), storage(v),
                               storage(depth_k), storage(depth_v), m);
    st.rope(storage(dq), kBatch, kSeq, kHeads, kHeadDim, 10000.0, true);
    ops.copy(dW.data(), dW_start.data(), int64_t(dW.size()));  // the added-to gradients
    ops.copy(dgain.data(), dgain_start.data(), kHeadDim);
    st.rmsnorm_backward(storage(dq_pre), dgain.data(), storage(dq), storage(q_pre), gain.data(),
                        rstd.data(), kRows * kHeads, kHeadDim, false);
    st.rmsnorm_backward(storage(dq_pre), dgain.data(), storage(dq), storage(q_pre), gain.data(),
                        rstd.data(), kRows * kHeads, kHeadDim, true);
    st.linear_backward(storage(dx), dW.data(), storage(dq_pre), storage(x), storage(W_q), kRows,
                       kWidth, kHeads * kHeadDim, false);
    st.linear_backward_wide(dx_wide.data(), dW.data(), storage(dq), storage(x), storage(W_q), kRows,
                            kWidth, kHeads * kHeadDim, false);
    st.linear_backward(storage(dx), dW.data(), storage(dq_moda), storage(x), storage(W_q), kRows,
                       kWidth, kHeads * kHeadDim, true);
    st.swiglu_backward(storage(da), storage(db), storage(dq), storage(q), storage(o), kQ);
    st.copy(storage(y), storage(y_start), kRows * kWidth);
    st.axpby(storage(y), 0.5f, storage(dx), 2.f, kRows * kWidth);
    st.copy_rows(storage(rows_out), kWidth, storage(y), kWidth, kRows, kWidth / 2);
    st.widen(o_wide.data(), storage(o), kQ);
  }

  std::vector<Bits> outputs() const {
    return {bits_of(x),       bits_of(q),         bits_of(k),         bits_of(v),
            bits_of(o),       bits_of(o_moda),    bits_of(h),         bits_of(dq),
            bits_of(dk),      bits_of(dv),        bits_of(dq_moda),   bits_of(dk_moda),
            bits_of(dv_moda), bits_of(d_depth_k), bits_of(d_depth_v), bits_of(dx),
            bits_of(dq_pre),  bits_of(da),        bits_of(db),        bits_of(y),
            bits_of(rstd),    bits_of(lse),       bits_of(lse_moda),  bits_of(y_wide),
            bits_of(dW),      bits_of(dx_wide),   bits_of(dgain),     bits_of(o_wide)};
  }
};

}  // namespace

BOOST_AUTO_TEST_CASE(bf16_storage_calls_replay_from_a_cuda_graph_with_the_eager_bits) {
  DB_REQUIRE_GPU();
  // auto: the fast path of the build (cuDNN or flash); reference: the widened fp32 kernel.
  for (AttentionPath path : {AttentionPath::automatic, AttentionPath::reference}) {
    std::printf("train.attention = %s\n", attention_path_name(path));
    OpsOptions options;
    options.precision = Precision::bf16;
    options.attention = path;
    options.cuda_graphs = CudaGraphs::on;
    std::unique_ptr<Ops<float>> ops = cuda::make_cuda_ops(options);
    StorageOps<float, bfloat16>& st = *ops->bf16_storage();
    Sublayer t;
    std::vector<Bits> eager;
    for (int run = 0; run < 4; ++run) {
      ops->run_captured("bf16 sublayer", [&] { t.enqueue(*ops, st); });
      const std::vector<Bits> bits = t.outputs();
      if (run == 0) {
        eager = bits;
        continue;
      }
      BOOST_TEST(bits.size() == eager.size());
      for (size_t i = 0; i < bits.size(); ++i)
        BOOST_TEST((bits[i] == eager[i]), "run " << run << ": output " << i << " differs");
    }
    std::printf("  cuda_graphs: %s; attention_paths: %s\n", ops->capture_status().c_str(),
                ops->attention_paths().c_str());
    BOOST_TEST(ops->capture_status() == "captured");
  }
}
