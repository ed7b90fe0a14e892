#include "ops/cpu/gemm.hpp"

#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace db::cpu {
namespace {

CBLAS_TRANSPOSE op(bool trans) {
  return trans ? CblasTrans : CblasNoTrans;
}

void blas(bool ta, bool tb, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, op(ta), op(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void blas(bool ta, bool tb, int M, int N, int K, double alpha, const double* A, int lda,
          const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, op(ta), op(tb), M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// Panel width along the split dimension: a function of the shape only, never of the thread
// count. Up to 16 panels keep up to 16 cores busy; each panel repacks the other operand, which
// costs too much below 128 rows or columns (bench/gemm_panels.cpp; doc/performance.md). A
// multiple of 16, the widest vector kernel of OpenBLAS.
int panel_width(int extent) {
  const int per_panel = std::max(128, (extent + 15) / 16);
  return (per_panel + 15) / 16 * 16;
}

// OpenBLAS multiplies a product of at most this many M·N·K single-threaded whatever its thread
// count (interface/gemm.c: SMP_THRESHOLD_MIN · GEMM_MULTITHREAD_THRESHOLD): such products need
// no panels, and a parallel region would cost more than the product.
constexpr int64_t kOpenBlasSingleThreadMNK = 65536 * 4;

template <class T>
void panelled_gemm(bool ta, bool tb, int M, int N, int K, T alpha, const T* A, int lda, const T* B,
                   int ldb, T beta, T* C, int ldc) {
  if (int64_t(M) * N * K <= kOpenBlasSingleThreadMNK)
    return blas(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  const bool split_rows = M >= N;
  const int extent = split_rows ? M : N;
  const int width = panel_width(extent);
  const int panels = (extent + width - 1) / width;
  // Always inside a parallel region, even for one panel: OpenBLAS's OpenMP build runs
  // single-threaded only there (elsewhere it follows OpenMP's thread count).
#pragma omp parallel for schedule(dynamic, 1)
  for (int p = 0; p < panels; ++p) {
    const int begin = p * width, size = std::min(extent, begin + width) - begin;
    if (split_rows) {  // rows of op(A) and of C
      const T* a = ta ? A + begin : A + static_cast<size_t>(begin) * lda;
      blas(ta, tb, size, N, K, alpha, a, lda, B, ldb, beta, C + static_cast<size_t>(begin) * ldc,
           ldc);
    } else {  // columns of op(B) and of C
      const T* b = tb ? B + static_cast<size_t>(begin) * ldb : B + begin;
      blas(ta, tb, M, size, K, alpha, A, lda, b, ldb, beta, C + begin, ldc);
    }
  }
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
  panelled_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A, int lda,
          const double* B, int ldb, double beta, double* C, int ldc) {
  panelled_gemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

std::string blas_core_name() {
  return openblas_get_corename();
}

void select_blas_kernels(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || blas_core_name() != "Prescott") return;
  __builtin_cpu_init();
  const char* core = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                     : __builtin_cpu_supports("avx2")  ? "Haswell"
                                                       : nullptr;
  if (!core) return;
  setenv("OPENBLAS_CORETYPE", core, 1);
  execv("/proc/self/exe", argv);  // only returns on failure: keep the slow kernels then
}

void set_cpu_threads(int threads) {
  if (threads < 1) threads = 1;
  // OpenBLAS's OpenMP build keeps its count equal to OpenMP's (it resets whichever differs, at a
  // cost on every call), so both get the same; inside gemm()'s parallel region it runs
  // single-threaded anyway.
  openblas_set_num_threads(threads);
  omp_set_num_threads(threads);
}

int cpu_threads() {
  return omp_get_max_threads();
}

}  // namespace db::cpu
