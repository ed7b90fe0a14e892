// Row-major GEMM on the CPU BLAS: C[M,N] = alpha·op(A)[M,K]·op(B)[K,N] + beta·C.
// Overloaded for float (training) and double (gradient checks).
#pragma once

namespace db::cpu {

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);
void gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A, int lda,
          const double* B, int ldb, double beta, double* C, int ldc);

// Number of threads the BLAS and our own loops use (set once at start-up).
void set_cpu_threads(int threads);
int cpu_threads();

}  // namespace db::cpu
