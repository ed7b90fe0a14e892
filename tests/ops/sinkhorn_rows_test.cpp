// The Sinkhorn row functions (model/residual/sinkhorn.hpp) have two ways to reach the forward
// iterates in the backward: the host loop keeps a trace, the CUDA kernel recomputes each iterate
// from the logits. This test runs the GPU's path on the CPU: both must give the same bits, ties of
// the row max included (the mHC init has them).
#define BOOST_TEST_MODULE sinkhorn_rows
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <cstring>
#include <vector>

#include "model/residual/sinkhorn.hpp"
#include "support/gradcheck.hpp"

using namespace db;

namespace {

// dlogits of every token by the recomputing path (trace = null), as the GPU runs it.
std::vector<float> backward_by_recomputation(const std::vector<float>& dout,
                                             const std::vector<float>& logits, int tokens, int n,
                                             int iters, double eps) {
  std::vector<float> dlogits(logits.size());
  std::vector<double> scratch(3 * n * n);
  for (int t = 0; t < tokens; ++t)
    sinkhorn_rows::sinkhorn_backward_row(&dlogits[t * n * n], &dout[t * n * n], &logits[t * n * n],
                                         n, iters, eps, nullptr, scratch.data());
  return dlogits;
}

std::vector<float> as_float(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

}  // namespace

BOOST_AUTO_TEST_CASE(sinkhorn_backward_recomputing_iterates_equals_the_traced_backward_bitwise) {
  const int tokens = 9, iters = 20;
  const double eps = 1e-6;
  for (int n : {1, 2, 4, 5, 8, 9, 16}) {  // every capacity of the functors (4, 8, 16)
    std::vector<float> logits = as_float(test::random_vector(tokens * n * n, 40 + n, 2.0));
    const std::vector<float> dout = as_float(test::random_vector(tokens * n * n, 50 + n));
    for (int e = 0; e < n * n; ++e) logits[e] = 0.f;  // token 0: all tied (the mHC init)
    std::vector<float> traced(logits.size());
    sinkhorn_backward(MemorySpace::host, traced.data(), dout.data(), logits.data(),
                      {tokens, n, iters, eps});
    const std::vector<float> recomputed =
        backward_by_recomputation(dout, logits, tokens, n, iters, eps);
    BOOST_TEST_CONTEXT("n = " << n) {
      BOOST_TEST(std::memcmp(traced.data(), recomputed.data(), traced.size() * sizeof(float)) == 0);
    }
  }
}
