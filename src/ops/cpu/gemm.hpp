// Row-major GEMM on the CPU BLAS: C[M,N] = alpha·op(A)[M,K]·op(B)[K,N] + beta·C.
// Overloaded for float (training) and double (gradient checks).
#pragma once
#include <string>

namespace db::cpu {

void gemm(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A, int lda,
          const float* B, int ldb, float beta, float* C, int ldc);
void gemm(bool trans_a, bool trans_b, int M, int N, int K, double alpha, const double* A, int lda,
          const double* B, int ldb, double beta, double* C, int ldc);

// OpenBLAS 0.3.21 (Debian 12) does not recognise recent Xeons and falls back to its slowest
// (Prescott) kernels, 4× slower here. When that happens and the user has not chosen a core
// type, this re-executes the program with OPENBLAS_CORETYPE set from the CPU's features
// (the variable is read when the library loads, so it cannot be set later). Call first in main.
void select_blas_kernels(char** argv);
std::string blas_core_name();

// Number of threads the BLAS and our own loops use (set once at start-up).
void set_cpu_threads(int threads);
int cpu_threads();

}  // namespace db::cpu
