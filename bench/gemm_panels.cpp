// The cost of thread-independent GEMM: db::cpu::gemm (fixed panels, each on single-threaded
// OpenBLAS) against OpenBLAS's own threading, on the products of a training step (forward
// X·Wᵀ, the logits, the weight gradient dYᵀ·X). Interleaved repetitions, best time of each.
// usage: gemm_panels_bench [threads] [tokens] [d_model]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ops/cpu/gemm.hpp"

namespace {

struct Product {
  const char* what;
  int M, N, K;
  bool trans_a, trans_b;
};

double seconds(auto&& body) {
  const auto t0 = std::chrono::steady_clock::now();
  body();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int tokens = argc > 2 ? std::atoi(argv[2]) : 4096;
  const int d = argc > 3 ? std::atoi(argv[3]) : 512;
  const int ff = (8 * d + 47) / 48 * 16;
  const Product products[] = {{"X.Wq^T", tokens, d, d, false, true},
                              {"X.W1^T", tokens, ff, d, false, true},
                              {"logits", tokens, 257, d, false, true},
                              {"dWq = dY^T.X", d, d, tokens, true, false},
                              {"dW1 = dY^T.X", ff, d, tokens, true, false}};
  std::printf("threads %d, %s; GFLOP/s best of 9 interleaved\n", threads,
              db::cpu::blas_core_name().c_str());
  std::printf("%-14s %6s %6s %6s %12s %12s %7s\n", "product", "M", "N", "K", "OpenBLAS", "panels",
              "ratio");
  for (const Product& p : products) {
    std::vector<float> A(size_t(p.M) * p.K, 0.5f), B(size_t(p.K) * p.N, 0.25f),
        C(size_t(p.M) * p.N);
    const int lda = p.trans_a ? p.M : p.K, ldb = p.trans_b ? p.K : p.N;
    double own = 1e9, panels = 1e9;
    for (int rep = 0; rep < 9; ++rep) {
      db::cpu::set_cpu_threads(threads);  // OpenBLAS threads = OpenMP threads
      own = std::min(own, seconds([&] {
                       cblas_sgemm(CblasRowMajor, p.trans_a ? CblasTrans : CblasNoTrans,
                                   p.trans_b ? CblasTrans : CblasNoTrans, p.M, p.N, p.K, 1.0f,
                                   A.data(), lda, B.data(), ldb, 0.0f, C.data(), p.N);
                     }));
      panels = std::min(panels, seconds([&] {
                          db::cpu::gemm(p.trans_a, p.trans_b, p.M, p.N, p.K, 1.0f, A.data(), lda,
                                        B.data(), ldb, 0.0f, C.data(), p.N);
                        }));
    }
    const double flops = 2.0 * p.M * p.N * p.K * 1e-9;
    std::printf("%-14s %6d %6d %6d %12.1f %12.1f %7.2f\n", p.what, p.M, p.N, p.K, flops / own,
                flops / panels, own / panels);
  }
}
