#include "ops/cpu/gemm.hpp"

#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace db::cpu {
namespace {
CBLAS_TRANSPOSE op(bool trans) {
  return trans ? CblasTrans : CblasNoTrans;
}
}  // namespace

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc) {
  cblas_sgemm(CblasRowMajor, op(trans_a), op(trans_b), M, N, K, alpha, A, lda, B, ldb, beta, C,
              ldc);
}

void gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A, int lda,
          const double* B, int ldb, double beta, double* C, int ldc) {
  cblas_dgemm(CblasRowMajor, op(trans_a), op(trans_b), M, N, K, alpha, A, lda, B, ldb, beta, C,
              ldc);
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
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

int cpu_threads() {
  return omp_get_max_threads();
}

}  // namespace db::cpu
