#include "ops/cuda/cuda_bf16_storage.hpp"

#include "core/memory.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "ops/cuda/elementwise.hpp"
#include "ops/cuda/op_stream.hpp"
#include "ops/cuda/qk_norm.hpp"
#include "ops/cuda/rmsnorm.hpp"
#include "ops/cuda/swiglu.hpp"

namespace db::cuda {
namespace {

// The host type and CUDA's are the same 16 bits (core/bfloat16.hpp rounds as __float2bfloat16):
// the pointers are reinterpreted, never converted.
static_assert(sizeof(bfloat16) == sizeof(bf16) && alignof(bfloat16) == alignof(bf16),
              "db::bfloat16 must have the layout of __nv_bfloat16");
bf16* dev(bfloat16* p) {
  return reinterpret_cast<bf16*>(p);
}
const bf16* dev(const bfloat16* p) {
  return reinterpret_cast<const bf16*>(p);
}

cudaStream_t stream() {
  return current_stream();
}

// The widening fallback keeps its fp32 copies in buffers of the current memory space: make it
// the GPU's whatever the caller's scope.
struct OnDevice {
  MemorySpaceScope scope{cuda_memory_space()};
};

}  // namespace

void CudaBf16Storage::narrow(bfloat16* dst, const float* src, int64_t count) {
  convert(dev(dst), src, count, stream());
}
void CudaBf16Storage::widen(float* dst, const bfloat16* src, int64_t count) {
  convert(dst, dev(src), count, stream());
}

// --- products: bf16 tensor cores, fp32 accumulation, one rounding of a bf16 output ---

void CudaBf16Storage::linear_forward(bfloat16* y, const bfloat16* x, const bfloat16* W,
                                     int64_t rows, int in, int out) {
  cuda::linear_forward(gemm_, dev(y), dev(x), dev(W), rows, in, out, stream());
}

void CudaBf16Storage::linear_forward_wide(float* y, const bfloat16* x, const bfloat16* W,
                                          int64_t rows, int in, int out) {
  gemm(gemm_, false, true, int(rows), out, in, 1.f, dev(x), in, dev(W), in, 0.f, y, out, stream());
}

// dx = dy·W with beta = 1 when it adds (the sum rounded once into bf16); dW += dyᵀ·x into fp32.
void CudaBf16Storage::linear_backward(bfloat16* dx, float* dW, const bfloat16* dy,
                                      const bfloat16* x, const bfloat16* W, int64_t rows, int in,
                                      int out, bool accumulate_dx) {
  cuda::linear_backward(gemm_, dev(dx), dW, dev(dy), dev(x), dev(W), rows, in, out, accumulate_dx,
                        stream());
}

void CudaBf16Storage::linear_backward_wide(float* dx, float* dW, const bfloat16* dy,
                                           const bfloat16* x, const bfloat16* W, int64_t rows,
                                           int in, int out, bool accumulate_dx) {
  // Null dx or dW: skipped, as the fp32 ops skip them.
  if (dx)
    gemm(gemm_, false, false, int(rows), in, out, 1.f, dev(dy), out, dev(W), in,
         accumulate_dx ? 1.f : 0.f, dx, in, stream());
  if (dW)
    gemm(gemm_, true, false, out, in, int(rows), 1.f, dev(dy), out, dev(x), in, 1.f, dW, in,
         stream());
}

// --- QK-norm and RoPE: statistics, gains and tables in fp32 ---

// Rows of up to 256 values (every head dim of the suites) by one warp each; wider ones by
// rmsnorm.cu's block per row.
void CudaBf16Storage::rmsnorm_forward(bfloat16* y, float* rstd, const bfloat16* x,
                                      const float* gain, int64_t rows, int width, double eps) {
  if (width <= kQkNormMaxWidth)
    return qk_norm_forward(dev(y), rstd, dev(x), gain, rows, width, eps, stream());
  cuda::rmsnorm_forward(dev(y), rstd, dev(x), gain, rows, width, eps, stream());
}

void CudaBf16Storage::rmsnorm_backward(bfloat16* dx, float* dgain, const bfloat16* dy,
                                       const bfloat16* x, const float* gain, const float* rstd,
                                       int64_t rows, int width, bool accumulate_dx) {
  if (width <= kQkNormMaxWidth)
    return qk_norm_backward(dev(dx), dgain, dev(dy), dev(x), gain, rstd, rows, width, accumulate_dx,
                            stream());
  cuda::rmsnorm_backward(dev(dx), dgain, dev(dy), dev(x), gain, rstd, rows, width, accumulate_dx,
                         stream());
}

void CudaBf16Storage::rope(bfloat16* x, int64_t batch, int seq_len, int heads, int head_dim,
                           double theta, bool inverse) {
  rope_apply(dev(x), rope_.table(seq_len, head_dim, theta, stream()), batch, seq_len, heads,
             inverse, stream());
}

void CudaBf16Storage::rope_qk(bfloat16* q, int heads, bfloat16* k, int kv_heads, int64_t batch,
                              int seq_len, int head_dim, double theta, bool inverse) {
  rope_apply_qk(dev(q), heads, dev(k), kv_heads, rope_.table(seq_len, head_dim, theta, stream()),
                batch, seq_len, inverse, stream());
}

void CudaBf16Storage::qk_norm_rope_forward(bfloat16* y, float* rstd, bfloat16* y_unrotated,
                                           const bfloat16* x, const float* gain, int64_t batch,
                                           int seq_len, int heads, int head_dim, double eps,
                                           double theta) {
  if (head_dim > kQkNormMaxWidth)
    return WideningStorageOps::qk_norm_rope_forward(y, rstd, y_unrotated, x, gain, batch, seq_len,
                                                    heads, head_dim, eps, theta);
  cuda::qk_norm_rope_forward(dev(y), dev(y_unrotated), rstd, dev(x), gain,
                             rope_.table(seq_len, head_dim, theta, stream()), batch, seq_len, heads,
                             eps, stream());
}

void CudaBf16Storage::qk_norm_rope_backward(bfloat16* dx, float* dgain, bfloat16* dy,
                                            const bfloat16* dy_unrotated, const bfloat16* x,
                                            const float* gain, const float* rstd, int64_t batch,
                                            int seq_len, int heads, int head_dim, double theta) {
  if (head_dim > kQkNormMaxWidth)
    return WideningStorageOps::qk_norm_rope_backward(dx, dgain, dy, dy_unrotated, x, gain, rstd,
                                                     batch, seq_len, heads, head_dim, theta);
  cuda::qk_norm_rope_backward(dev(dx), dgain, dev(dy), dev(dy_unrotated), dev(x), gain, rstd,
                              rope_.table(seq_len, head_dim, theta, stream()), batch, seq_len,
                              heads, stream());
}

// --- attention: the shape's fast path on the bf16 tensors; the reference kernel widened ---

void CudaBf16Storage::attention_forward(bfloat16* o, float* lse, const bfloat16* q,
                                        const bfloat16* k, const bfloat16* v,
                                        const AttentionShape& s) {
  if (attention_.path_for(s) == AttentionPath::reference) {
    const OnDevice on_device;
    return WideningStorageOps::attention_forward(o, lse, q, k, v, s);
  }
  attention_.forward(dev(o), lse, dev(q), dev(k), dev(v), s, stream());
}

void CudaBf16Storage::attention_backward(bfloat16* dq, bfloat16* dk, bfloat16* dv,
                                         const bfloat16* d_o, const bfloat16* o, const float* lse,
                                         const bfloat16* q, const bfloat16* k, const bfloat16* v,
                                         const AttentionShape& s) {
  if (attention_.path_for(s) == AttentionPath::reference) {
    const OnDevice on_device;
    return WideningStorageOps::attention_backward(dq, dk, dv, d_o, o, lse, q, k, v, s);
  }
  attention_.backward(dev(dq), dev(dk), dev(dv), dev(d_o), dev(o), lse, dev(q), dev(k), dev(v), s,
                      stream());
}

void CudaBf16Storage::moda_attention_forward(bfloat16* o, float* lse, const bfloat16* q,
                                             const bfloat16* k, const bfloat16* v,
                                             const bfloat16* depth_k, const bfloat16* depth_v,
                                             const ModaShape& s) {
  if (attention_.moda_path_for(s) == AttentionPath::reference) {
    const OnDevice on_device;
    return WideningStorageOps::moda_attention_forward(o, lse, q, k, v, depth_k, depth_v, s);
  }
  attention_.moda_forward(dev(o), lse, dev(q), dev(k), dev(v), dev(depth_k), dev(depth_v), s,
                          stream());
}

void CudaBf16Storage::moda_attention_backward(
    bfloat16* dq, bfloat16* dk, bfloat16* dv, bfloat16* d_depth_k, bfloat16* d_depth_v,
    const bfloat16* d_o, const bfloat16* o, const float* lse, const bfloat16* q, const bfloat16* k,
    const bfloat16* v, const bfloat16* depth_k, const bfloat16* depth_v, const ModaShape& s) {
  if (attention_.moda_path_for(s) == AttentionPath::reference) {
    const OnDevice on_device;
    return WideningStorageOps::moda_attention_backward(dq, dk, dv, d_depth_k, d_depth_v, d_o, o,
                                                       lse, q, k, v, depth_k, depth_v, s);
  }
  attention_.moda_backward(dev(dq), dev(dk), dev(dv), dev(d_depth_k), dev(d_depth_v), dev(d_o),
                           dev(o), lse, dev(q), dev(k), dev(v), dev(depth_k), dev(depth_v), s,
                           stream());
}

// --- FFN gate and element-wise ---

void CudaBf16Storage::swiglu_forward(bfloat16* h, const bfloat16* a, const bfloat16* b,
                                     int64_t count) {
  cuda::swiglu_forward(dev(h), dev(a), dev(b), count, stream());
}

void CudaBf16Storage::swiglu_backward(bfloat16* da, bfloat16* db, const bfloat16* dh,
                                      const bfloat16* a, const bfloat16* b, int64_t count) {
  cuda::swiglu_backward(dev(da), dev(db), dev(dh), dev(a), dev(b), count, stream());
}

void CudaBf16Storage::copy(bfloat16* dst, const bfloat16* src, int64_t count) {
  if (dst == src || count <= 0) return;
  CUDA_CHECK(cudaMemcpyAsync(dst, src, size_t(count) * sizeof(bfloat16), cudaMemcpyDeviceToDevice,
                             stream()));
}

void CudaBf16Storage::axpby(bfloat16* y, float a, const bfloat16* x, float b, int64_t count) {
  cuda::axpby(dev(y), a, dev(x), b, count, stream());
}

void CudaBf16Storage::copy_rows(bfloat16* dst, int64_t dst_stride, const bfloat16* src,
                                int64_t src_stride, int64_t rows, int width) {
  if (rows <= 0 || width <= 0) return;
  if (rows == 1) return copy(dst, src, width);  // a pitch may be shorter than one row
  constexpr size_t kBytes = sizeof(bfloat16);
  CUDA_CHECK(cudaMemcpy2DAsync(dst, size_t(dst_stride) * kBytes, src, size_t(src_stride) * kBytes,
                               size_t(width) * kBytes, size_t(rows), cudaMemcpyDeviceToDevice,
                               stream()));
}

}  // namespace db::cuda
