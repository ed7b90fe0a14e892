// The CPU GEMM gives the same bits on any number of threads, for every transpose case and for
// shapes where OpenBLAS's own threading does not (it differs between 1 and 2 threads on
// 96×96×32 already), and it agrees with a plain float64 product.
#define BOOST_TEST_MODULE gemm_threads
#define BOOST_TEST_DYN_LINK
#include <omp.h>

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ops/cpu/gemm.hpp"

namespace {

struct Product {
  int M, N, K;
  bool trans_a, trans_b;
};

std::vector<float> multiply(const Product& p, const std::vector<float>& A,
                            const std::vector<float>& B, int threads) {
  db::cpu::set_cpu_threads(threads);
  std::vector<float> C(size_t(p.M) * p.N, 1.0f);
  db::cpu::gemm(p.trans_a, p.trans_b, p.M, p.N, p.K, 1.0f, A.data(), p.trans_a ? p.M : p.K,
                B.data(), p.trans_b ? p.K : p.N, 0.5f, C.data(), p.N);
  return C;
}

}  // namespace

BOOST_AUTO_TEST_CASE(same_bits_on_one_two_and_three_threads) {
  const Product products[] = {{64, 64, 64, false, true},    {65, 64, 64, false, true},
                              {96, 96, 32, false, true},    {32, 96, 96, true, false},
                              {700, 300, 64, false, false}, {300, 700, 64, true, true},
                              {1000, 20, 50, false, true},  {20, 1000, 50, true, false}};
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (const Product& p : products) {
    std::vector<float> A(size_t(p.M) * p.K), B(size_t(p.K) * p.N);
    for (float& x : A) x = normal(rng);
    for (float& x : B) x = normal(rng);
    const std::vector<float> one = multiply(p, A, B, 1);
    for (int threads : {2, 3}) {
      const std::vector<float> many = multiply(p, A, B, threads);
      BOOST_TEST(std::memcmp(one.data(), many.data(), one.size() * sizeof(float)) == 0,
                 p.M << "x" << p.N << "x" << p.K << " differs on " << threads << " threads");
      BOOST_TEST(omp_get_max_threads() == threads);  // OpenBLAS must not reset our thread count
    }
    // Against float64: C = A·B + 0.5 (C started at 1).
    double worst = 0;
    for (int i = 0; i < p.M; ++i)
      for (int j = 0; j < p.N; ++j) {
        double sum = 0.5;
        for (int k = 0; k < p.K; ++k)
          sum += double(p.trans_a ? A[size_t(k) * p.M + i] : A[size_t(i) * p.K + k]) *
                 double(p.trans_b ? B[size_t(j) * p.K + k] : B[size_t(k) * p.N + j]);
        worst = std::max(worst, std::abs(sum - double(one[size_t(i) * p.N + j])));
      }
    BOOST_TEST(worst < 1e-4 * p.K);
  }
}
