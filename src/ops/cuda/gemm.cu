#include <string>
#include <type_traits>

#include "core/error.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/cuda_memory.hpp"
#include "ops/cuda/gemm.hpp"

namespace db::cuda {

struct GemmHandle::Plan {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  bool ready = false;   // descriptors built and the heuristic asked
  bool use_lt = false;  // false: cublasGemmEx fallback
  ~Plan() {
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

GemmHandle::GemmHandle(size_t workspace_bytes, bool bf16_math)
    : workspace_bytes_(workspace_bytes), bf16_math_(bf16_math) {
  CUBLAS_CHECK(cublasLtCreate(&lt_));
  CUBLAS_CHECK(cublasCreate(&blas_));
  // Parity mode relies on true fp32 products: keep TF32 off in the fallback path.
  CUBLAS_CHECK(cublasSetMathMode(blas_, CUBLAS_DEFAULT_MATH));
  workspace_ = device_allocate(workspace_bytes_);
}

GemmHandle::~GemmHandle() {
  plans_.clear();
  device_release(workspace_);
  if (blas_) cublasDestroy(blas_);
  if (lt_) cublasLtDestroy(lt_);
}

namespace {

// Largest power of two (≤ 256) dividing the address: cuBLASLt's alignment preference.
int alignment_of(const void* p) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  int align = 256;
  while (align > 1 && (a % align) != 0) align >>= 1;
  return align;
}

// Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ: cuBLAS sees B first.
template <class TA, class TC>
void gemm_impl(GemmHandle& h, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
               const TA* A, int lda, const TA* B, int ldb, float beta, TC* C, int ldc,
               cudaStream_t stream) {
  if (M <= 0 || N <= 0) return;
  constexpr bool kInBf16 = std::is_same_v<TA, bf16>;
  constexpr bool kOutBf16 = std::is_same_v<TC, bf16>;
  const cudaDataType_t ta = kInBf16 ? CUDA_R_16BF : CUDA_R_32F;
  const cudaDataType_t tc = kOutBf16 ? CUDA_R_16BF : CUDA_R_32F;
  const GemmHandle::Key key{int(kInBf16),
                            int(kOutBf16),
                            int(trans_a),
                            int(trans_b),
                            M,
                            N,
                            K,
                            lda,
                            ldb,
                            ldc,
                            alignment_of(A) * 1000 + alignment_of(B),
                            alignment_of(C)};
  // fp32 operands in bf16 mode: tensor cores round the inputs to bf16 and accumulate in fp32.
  const cublasComputeType_t compute =
      !kInBf16 && h.bf16_math() ? CUBLAS_COMPUTE_32F_FAST_16BF : CUBLAS_COMPUTE_32F;
  GemmHandle::Plan* plan = h.plan(key);
  if (!plan->ready) {
    plan->ready = true;
    // First use of this key: build descriptors and ask the heuristic for one algorithm.
    const cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&plan->op, compute, CUDA_R_32F));
    // cuBLAS operand "A" is our B, operand "B" is our A.
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof(op_b)));
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(plan->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof(op_a)));
    // Stored (column-major) shapes: our B is [K,N] row-major = col-major N×K (ld ldb), or
    // [N,K] row-major = col-major K×N when transposed; likewise for A.
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->a, ta, trans_b ? K : N, trans_b ? N : K, ldb));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->b, ta, trans_a ? M : K, trans_a ? K : M, lda));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&plan->c, tc, N, M, ldc));
    cublasLtMatmulPreference_t pref = nullptr;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = h.workspace_bytes();
    uint32_t align_a = uint32_t(alignment_of(B)), align_b = uint32_t(alignment_of(A)),
             align_c = uint32_t(alignment_of(C));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c)));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof(align_c)));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
        h.lt(), plan->op, plan->a, plan->b, plan->c, plan->c, pref, 1, &result, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    // K = 0 (C = beta·C) goes to cublasGemmEx, which defines that case.
    plan->use_lt = status == CUBLAS_STATUS_SUCCESS && found > 0 && K > 0;
    if (plan->use_lt) plan->algo = result.algo;
  }
  if (plan->use_lt) {
    CUBLAS_CHECK(cublasLtMatmul(h.lt(), plan->op, &alpha, B, plan->a, A, plan->b, &beta, C, plan->c,
                                C, plan->c, &plan->algo, h.workspace(), h.workspace_bytes(),
                                stream));
    return;
  }
  CUBLAS_CHECK(cublasSetStream(h.blas(), stream));
  CUBLAS_CHECK(cublasGemmEx(h.blas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                            trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, ta, ldb, A, ta,
                            lda, &beta, C, tc, ldc, compute, CUBLAS_GEMM_DEFAULT));
}

}  // namespace

GemmHandle::Plan* GemmHandle::plan(const Key& key) {
  auto& slot = plans_[key];
  if (!slot) slot = std::make_unique<Plan>();
  return slot.get();
}

void gemm(GemmHandle& h, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
          const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc,
          cudaStream_t stream) {
  gemm_impl(h, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}
void gemm(GemmHandle& h, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
          const bf16* A, int lda, const bf16* B, int ldb, float beta, bf16* C, int ldc,
          cudaStream_t stream) {
  gemm_impl(h, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}
void gemm(GemmHandle& h, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
          const bf16* A, int lda, const bf16* B, int ldb, float beta, float* C, int ldc,
          cudaStream_t stream) {
  gemm_impl(h, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}

template <class T>
void linear_forward(GemmHandle& h, T* y, const T* x, const T* W, int64_t N, int in, int out,
                    cudaStream_t stream) {
  gemm(h, false, true, int(N), out, in, 1.f, x, in, W, in, 0.f, y, out, stream);
}

template <class T>
void linear_backward(GemmHandle& h, T* dx, float* dW, const T* dy, const T* x, const T* W,
                     int64_t N, int in, int out, bool accumulate_dx, cudaStream_t stream) {
  if (dx)
    gemm(h, false, false, int(N), in, out, 1.f, dy, out, W, in, accumulate_dx ? 1.f : 0.f, dx, in,
         stream);
  if (dW) gemm(h, true, false, out, in, int(N), 1.f, dy, out, x, in, 1.f, dW, in, stream);
}

template void linear_forward<float>(GemmHandle&, float*, const float*, const float*, int64_t, int,
                                    int, cudaStream_t);
template void linear_forward<bf16>(GemmHandle&, bf16*, const bf16*, const bf16*, int64_t, int, int,
                                   cudaStream_t);
template void linear_backward<float>(GemmHandle&, float*, float*, const float*, const float*,
                                     const float*, int64_t, int, int, bool, cudaStream_t);
template void linear_backward<bf16>(GemmHandle&, bf16*, float*, const bf16*, const bf16*,
                                    const bf16*, int64_t, int, int, bool, cudaStream_t);

}  // namespace db::cuda
