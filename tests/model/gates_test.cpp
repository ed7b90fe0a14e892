// The gate kit (model/residual/gates.hpp): out = x + g ⊙ y with a scalar or per-channel gate
// read from the backend's memory. Its backward matches finite differences of a loss Σ w ⊙ out
// (float64), and on an emulated GPU warp (tests/support/emulated_warp.hpp) it gives the host's
// dy bits and gate gradient: the scalar gate's row sum is added by the leader lane only (the
// emulation reports a column two lanes add to, so a kit where every lane added would fail).
#define BOOST_TEST_DYN_LINK
#define BOOST_TEST_MODULE gates
#include "model/residual/gates.hpp"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <vector>

#include "core/rng.hpp"
#include "support/emulated_warp.hpp"

using namespace db;

namespace {

constexpr int64_t kRows = 37;  // more than one chunk of rows on the emulated warp
constexpr int kD = 40;         // more columns than lanes, not a multiple of 32

std::vector<double> random_values(int64_t count, uint64_t seed) {
  Rng rng(seed);
  std::vector<double> v(count);
  for (double& x : v) x = rng.normal();
  return v;
}

// Σ w ⊙ (x + g ⊙ y) on the host through the kit's forward functor.
double loss(const std::vector<double>& x, const std::vector<double>& gate,
            const std::vector<double>& y, const std::vector<double>& w) {
  std::vector<double> out(x.size());
  for_each_row_element(
      MemorySpace::host, kRows, kD,
      GatedAdd<double>{out.data(), x.data(), gate.data(), y.data(), kD, int(gate.size())});
  double s = 0;
  for (size_t i = 0; i < out.size(); ++i) s += w[i] * out[i];
  return s;
}

}  // namespace

BOOST_AUTO_TEST_CASE(gated_add_backward_matches_finite_differences_for_both_gate_widths) {
  for (int width : {1, kD}) {
    BOOST_TEST_CONTEXT("gate width " << width) {
      const std::vector<double> x = random_values(kRows * kD, 1), y = random_values(kRows * kD, 2),
                                w = random_values(kRows * kD, 3);
      std::vector<double> gate = random_values(width, 4);
      std::vector<double> dy(kRows * kD), dgate(width, 0.0);
      SumTargets<double> targets;
      targets.add(dgate.data(), width);
      for_each_row_sum_lanes(
          MemorySpace::host, kRows, targets,
          GatedAddBackward<double>{dy.data(), w.data(), gate.data(), y.data(), kD, width});
      const double h = 1e-6;
      for (int e = 0; e < width; ++e) {
        std::vector<double> plus = gate, minus = gate;
        plus[e] += h;
        minus[e] -= h;
        const double fd = (loss(x, plus, y, w) - loss(x, minus, y, w)) / (2 * h);
        BOOST_TEST(std::fabs(fd - dgate[e]) <= 1e-6 * std::max(1.0, std::fabs(fd)), "dgate " << e);
      }
      // dy = g ⊙ dout: ∂loss/∂y[i] = g·w[i].
      for (int64_t i = 0; i < kRows * kD; ++i)
        BOOST_TEST(dy[i] == gate[width == 1 ? 0 : i % kD] * w[i]);
    }
  }
}

BOOST_AUTO_TEST_CASE(gated_add_backward_on_an_emulated_warp_adds_each_gate_sum_once) {
  for (int width : {1, kD}) {
    BOOST_TEST_CONTEXT("gate width " << width) {
      const std::vector<float> dout(kRows * kD, 0.25f), y(kRows * kD, 2.0f), gate(width, 0.5f);
      std::vector<float> dy_host(kRows * kD), dy_warp(kRows * kD);
      std::vector<float> dgate_host(width, 0.0f), dgate_warp(width, 0.0f);
      SumTargets<float> host_targets, warp_targets;
      host_targets.add(dgate_host.data(), width);
      warp_targets.add(dgate_warp.data(), width);
      for_each_row_sum_lanes(
          MemorySpace::host, kRows, host_targets,
          GatedAddBackward<float>{dy_host.data(), dout.data(), gate.data(), y.data(), kD, width});
      test::emulated_row_sum_lanes(
          kRows, warp_targets,
          GatedAddBackward<float>{dy_warp.data(), dout.data(), gate.data(), y.data(), kD, width});
      BOOST_TEST(dy_warp == dy_host, boost::test_tools::per_element());
      // Every product is 0.5 exactly, so any order of adding gives the exact sum.
      const double per_gate = 0.5 * kRows * (width == 1 ? kD : 1);
      for (int e = 0; e < width; ++e) {
        BOOST_TEST(dgate_host[e] == per_gate);
        BOOST_TEST(dgate_warp[e] == per_gate);  // not 32 times it
      }
    }
  }
}
