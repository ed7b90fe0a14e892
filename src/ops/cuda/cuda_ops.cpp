#include "ops/cuda/cuda_ops.hpp"

#include "ops/cuda/add_rmsnorm.hpp"
#include "ops/cuda/attention_paths.hpp"
#include "ops/cuda/cross_entropy.hpp"
#include "ops/cuda/cuda_bf16_storage.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_graph.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "ops/cuda/elementwise.hpp"
#include "ops/cuda/embedding.hpp"
#include "ops/cuda/gemm.hpp"
#include "ops/cuda/op_stream.hpp"
#include "ops/cuda/rmsnorm.hpp"
#include "ops/cuda/rope.hpp"
#include "ops/cuda/swiglu.hpp"
#include "ops/cuda/token_upload.hpp"

namespace db::cuda {
namespace {

// Every op is enqueued on one stream, current_stream() (op_stream.hpp): the legacy default
// stream, which also orders the synchronous copies and the pool allocations of cuda_memory.cpp,
// or the capture stream while a micro-batch is captured (train.cuda_graphs, cuda_graph.hpp);
// only the ops that return host values synchronise.
class CudaOps final : public Ops<float> {
 public:
  explicit CudaOps(const OpsOptions& options)
      : gemm_(size_t(32) << 20, /*bf16_math=*/options.precision == Precision::bf16),
        attention_(options.attention, options.precision),
        graphs_(options.cuda_graphs),
        precision_(options.precision),
        head_logits_(stores_bf16(options, /*gpu=*/true) ? HeadLogits::bf16 : HeadLogits::fp32) {}
  MemorySpace space() const override { return cuda_memory_space(); }
  const char* name() const override { return "cuda"; }
  std::string attention_paths() const override { return attention_.report(); }

  // --- products ---
  void gemm(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
            const float* B, int ldb, float beta, float* C, int ldc) override {
    cuda::gemm(gemm_, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream());
  }
  void linear_forward(float* y, const float* x, const float* W, int64_t rows, int in,
                      int out) override {
    cuda::linear_forward(gemm_, y, x, W, rows, in, out, stream());
  }
  void linear_backward(float* dx, float* dW, const float* dy, const float* x, const float* W,
                       int64_t rows, int in, int out, bool accumulate_dx) override {
    cuda::linear_backward(gemm_, dx, dW, dy, x, W, rows, in, out, accumulate_dx, stream());
  }

  // --- norms ---
  void rmsnorm_forward(float* y, float* rstd, const float* x, const float* gain, int64_t rows,
                       int width, double eps) override {
    cuda::rmsnorm_forward(y, rstd, x, gain, rows, width, eps, stream());
  }
  void rmsnorm_backward(float* dx, float* dgain, const float* dy, const float* x, const float* gain,
                        const float* rstd, int64_t rows, int width, bool accumulate_dx) override {
    cuda::rmsnorm_backward(dx, dgain, dy, x, gain, rstd, rows, width, accumulate_dx, stream());
  }
  void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gain,
                         int64_t rows, int width, double eps) override {
    cuda::layernorm_forward(y, mean, rstd, x, gain, rows, width, eps, stream());
  }
  void layernorm_backward(float* dx, float* dgain, const float* dy, const float* x,
                          const float* gain, const float* mean, const float* rstd, int64_t rows,
                          int width, bool accumulate_dx) override {
    cuda::layernorm_backward(dx, dgain, dy, x, gain, mean, rstd, rows, width, accumulate_dx,
                             stream());
  }
  void add_rmsnorm_forward(float* sum, float* y, float* rstd, const float* x, const float* branch,
                           float alpha, const float* gain, int64_t rows, int width,
                           double eps) override {
    cuda::add_rmsnorm_forward(sum, y, rstd, x, branch, alpha, gain, rows, width, eps, stream());
  }
  void add_layernorm_forward(float* sum, float* y, float* mean, float* rstd, const float* x,
                             const float* branch, float alpha, const float* gain, int64_t rows,
                             int width, double eps) override {
    cuda::add_layernorm_forward(sum, y, mean, rstd, x, branch, alpha, gain, rows, width, eps,
                                stream());
  }
  void norm_add_rmsnorm_forward(float* sum, float* y, float* rstd, float* branch_rstd,
                                const float* x, const float* branch, const float* branch_gain,
                                const float* gain, int64_t rows, int width, double eps) override {
    cuda::norm_add_rmsnorm_forward(sum, y, rstd, branch_rstd, x, branch, branch_gain, gain, rows,
                                   width, eps, stream());
  }

  // --- attention sublayer pieces ---
  void rope(float* x, int64_t batch, int seq_len, int heads, int head_dim, double theta,
            bool inverse) override {
    rope_apply(x, rope_.table(seq_len, head_dim, theta, stream()), batch, seq_len, heads, inverse,
               stream());
  }
  void attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                         const AttentionShape& s) override {
    attention_.forward(o, lse, q, k, v, s, stream());
  }
  void attention_backward(float* dq, float* dk, float* dv, const float* d_o, const float* o,
                          const float* lse, const float* q, const float* k, const float* v,
                          const AttentionShape& s) override {
    attention_.backward(dq, dk, dv, d_o, o, lse, q, k, v, s, stream());
  }
  void moda_attention_forward(float* o, float* lse, const float* q, const float* k, const float* v,
                              const float* depth_k, const float* depth_v,
                              const ModaShape& s) override {
    attention_.moda_forward(o, lse, q, k, v, depth_k, depth_v, s, stream());
  }
  void moda_attention_backward(float* dq, float* dk, float* dv, float* d_depth_k, float* d_depth_v,
                               const float* d_o, const float* o, const float* lse, const float* q,
                               const float* k, const float* v, const float* depth_k,
                               const float* depth_v, const ModaShape& s) override {
    attention_.moda_backward(dq, dk, dv, d_depth_k, d_depth_v, d_o, o, lse, q, k, v, depth_k,
                             depth_v, s, stream());
  }
  void swiglu_forward(float* h, const float* a, const float* b, int64_t count) override {
    cuda::swiglu_forward(h, a, b, count, stream());
  }
  void swiglu_backward(float* da, float* db, const float* dh, const float* a, const float* b,
                       int64_t count) override {
    cuda::swiglu_backward(da, db, dh, a, b, count, stream());
  }

  // --- embedding and LM head ---
  void embedding_forward(float* x, const int32_t* tokens, const float* table, int64_t rows,
                         int d) override {
    cuda::embedding_forward(x, tokens, table, rows, d, stream());
  }
  void embedding_backward(float* dtable, const int32_t* tokens, const float* dx, int64_t rows,
                          int d) override {
    cuda::embedding_backward(dtable, tokens, dx, rows, d, stream());
  }
  void cross_entropy(double* loss_sum, const float* h, const float* W, const int32_t* targets,
                     const HeadShape& s, float* dh, float* dW, double grad_scale) override {
    // bf16: bf16 operands and dlogits instead of fp32 ones rounded inside cuBLAS (doc/cuda.md).
    if (precision_ == Precision::bf16)
      lm_head_cross_entropy_add_in_bf16(gemm_, loss_sum, h, W, targets, s, head_logits_, dh, dW,
                                        grad_scale, stream());
    else
      lm_head_cross_entropy_add(gemm_, loss_sum, h, W, targets, s, dh, dW, grad_scale, stream());
  }
  void cross_entropy_rows(double* losses, const float* h, const float* W, const int32_t* targets,
                          const HeadShape& s) override {
    if (precision_ == Precision::bf16)
      lm_head_row_losses_in_bf16(gemm_, losses, h, W, targets, s, head_logits_, stream());
    else
      lm_head_row_losses(gemm_, losses, h, W, targets, s, stream());
  }
  void logits(float* out, const float* h, const float* W, const HeadShape& s) override {
    lm_head_logits(gemm_, out, h, W, s, stream());
  }

  // --- element-wise ---
  void copy(float* dst, const float* src, int64_t count) override {
    if (dst == src || count <= 0) return;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(count) * sizeof(float), cudaMemcpyDeviceToDevice,
                               stream()));
  }
  void axpby(float* y, float a, const float* x, float b, int64_t count) override {
    cuda::axpby(y, a, x, b, count, stream());
  }
  void copy_rows(float* dst, int64_t dst_stride, const float* src, int64_t src_stride, int64_t rows,
                 int width) override {
    if (rows <= 0 || width <= 0) return;
    if (rows == 1) return copy(dst, src, width);  // a pitch may be shorter than one row
    CUDA_CHECK(cudaMemcpy2DAsync(dst, size_t(dst_stride) * sizeof(float), src,
                                 size_t(src_stride) * sizeof(float), size_t(width) * sizeof(float),
                                 size_t(rows), cudaMemcpyDeviceToDevice, stream()));
  }

  // --- tokens ---
  void upload_tokens(int32_t* dst, const int32_t* host, int64_t count) override {
    tokens_.upload(dst, host, count, stream());
  }

  // --- activations stored in bf16 ---
  StorageOps<float, bfloat16>* bf16_storage() override {
    if (!bf16_storage_)
      bf16_storage_ = std::make_unique<CudaBf16Storage>(*this, gemm_, attention_, rope_);
    return bf16_storage_.get();
  }

  // --- replay of recorded micro-batches ---
  void run_captured(const std::string& key, const std::function<void()>& body) override {
    graphs_.run(key, body);
  }
  std::string capture_status() const override { return graphs_.status(); }

 private:
  static cudaStream_t stream() { return current_stream(); }
  GemmHandle gemm_;
  AttentionPaths attention_;  // train.attention: which kernel runs each shape
  RopeCache rope_;
  MicroBatchGraphs graphs_;  // train.cuda_graphs
  TokenUpload tokens_;
  Precision precision_;     // bf16: the LM head runs on bf16 operands
  HeadLogits head_logits_;  // and, under bf16 activation storage, writes bf16 logits
  // Last: it refers to the members above (destroyed first). Made on first use.
  std::unique_ptr<CudaBf16Storage> bf16_storage_;
};

}  // namespace

std::unique_ptr<Ops<float>> make_cuda_ops(const OpsOptions& options) {
  return std::make_unique<CudaOps>(options);
}

}  // namespace db::cuda
