// Row-major GEMM on cuBLASLt, mirroring cpu::gemm: C[M,N] = alpha·op(A)[M,K]·op(B)[K,N] + beta·C
// with fp32 accumulation. Three precision combinations:
//   float × float → float   parity mode: CUBLAS_COMPUTE_32F, TF32 off (bit-for-bit fp32 FMAs);
//                           with bf16_math, CUBLAS_COMPUTE_32F_FAST_16BF (bf16 tensor cores)
//   bf16  × bf16  → bf16    training activations
//   bf16  × bf16  → float   weight gradients (accumulated into the fp32 master grads, beta = 1)
// A plan (descriptors + heuristic algorithm) is cached per shape, alignment and type; when
// cuBLASLt offers no algorithm (odd leading dimensions) the call falls back to cublasGemmEx.
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "ops/cuda/types.hpp"

namespace db::cuda {

class GemmHandle {
 public:
  // bf16_math: float products run on bf16 tensor cores (inputs rounded to bf16, fp32
  // accumulation), the training precision of the fp32-storage model.
  explicit GemmHandle(size_t workspace_bytes = size_t(32) << 20, bool bf16_math = false);
  ~GemmHandle();
  GemmHandle(const GemmHandle&) = delete;
  GemmHandle& operator=(const GemmHandle&) = delete;

  struct Plan;
  using Key = std::tuple<int, int, int, int, int, int, int, int, int, int, int, int>;
  // Internal: the cached plan for a key (created on first use).
  Plan* plan(const Key& key);

  cublasLtHandle_t lt() const { return lt_; }
  cublasHandle_t blas() const { return blas_; }
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  bool bf16_math() const { return bf16_math_; }

 private:
  cublasLtHandle_t lt_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  bool bf16_math_ = false;
  std::map<Key, std::unique_ptr<Plan>> plans_;
};

void gemm(GemmHandle& h, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
          const float* A, int lda, const float* B, int ldb, float beta, float* C, int ldc,
          cudaStream_t stream = nullptr);
void gemm(GemmHandle& h, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
          const bf16* A, int lda, const bf16* B, int ldb, float beta, bf16* C, int ldc,
          cudaStream_t stream = nullptr);
void gemm(GemmHandle& h, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
          const bf16* A, int lda, const bf16* B, int ldb, float beta, float* C, int ldc,
          cudaStream_t stream = nullptr);

// Linear layer without bias, as cpu::linear (W is [out, in], y = x·Wᵀ).
template <class T>
void linear_forward(GemmHandle& h, T* y, const T* x, const T* W, int64_t N, int in, int out,
                    cudaStream_t stream = nullptr);
// dx = dy·W (overwritten, or added when accumulate_dx; skipped when null);
// dW += dyᵀ·x into the fp32 gradient (skipped when null).
template <class T>
void linear_backward(GemmHandle& h, T* dx, float* dW, const T* dy, const T* x, const T* W,
                     int64_t N, int in, int out, bool accumulate_dx = false,
                     cudaStream_t stream = nullptr);

}  // namespace db::cuda
