// Learned branch gates, the kit shared by ReZero-like designs (x' = x + α·F(x), α one scalar per
// sublayer), LayerScale and the gated_residual example (α one value per channel):
//   out = x + g ⊙ y,   g [gate_width] with gate_width 1 (a scalar) or d (per channel).
// A gate is a parameter, so it lives in the backend's memory (device memory under CUDA): it
// cannot be an Ops::axpby coefficient (a host scalar). These functors read it where it is and
// run on every backend through ops/launch.hpp (the file that calls them is compiled like the
// designs, CMake: depthbench_device_sources).
//
// Backward of out = x + g ⊙ y, given dout = ∂loss/∂out:
//   ∂/∂x = dout (unchanged: the stream's gradient passes through the add),
//   dy = g ⊙ dout (overwritten),
//   dg += Σ_rows dout ⊙ y per channel, or Σ_rows Σ_channels dout·y for a scalar gate (added).
// The sums run per row with for_each_row_sum_lanes: on a GPU a warp's 32 lanes share a row, each
// lane taking the columns j = first, first + step, .... The leader-lane rule: a lane adds only to
// the sums of its own columns; a sum that the whole row shares (the scalar gate's) is formed
// with lanes.sum(part), which every lane receives in the same bits, and added by the leader lane
// alone (lanes.leader()): were every lane to add it, it would count 32 times. On the host one
// lane takes the row and is the leader, so the rule costs nothing there.
#pragma once
#include <cmath>
#include <limits>
#include <vector>

#include "model/backbone.hpp"
#include "ops/launch.hpp"

namespace db {

// out[r, e] = x[r, e] + g·y[r, e], g = gate[0] or gate[e]; out may be x or y.
template <class T>
struct GatedAdd {
  T* out;
  const T *x, *gate, *y;
  int d, gate_width;
  DB_HD void operator()(int64_t r, int e) const {
    const int64_t i = r * d + e;
    out[i] = x[i] + gate[gate_width == 1 ? 0 : e] * y[i];
  }
};

// Its backward for one row: dy = g ⊙ dout (overwritten), dout ⊙ y into the gate's sums.
template <class T>
struct GatedAddBackward {
  T* dy;
  const T *dout, *gate, *y;
  int d, gate_width;
  template <class Lanes>
  DB_HD void operator()(int64_t r, double* dgate, const Lanes& lanes) const {
    const T* dr = dout + r * d;
    const T* yr = y + r * d;
    double row = 0;  // the scalar gate's share of this row, partial over this lane's columns
    for (int e = lanes.first(); e < d; e += lanes.step()) {
      dy[r * d + e] = gate[gate_width == 1 ? 0 : e] * dr[e];
      const double product = double(dr[e]) * yr[e];
      if (gate_width == 1)
        row += product;
      else
        dgate[e] += product;  // column e is this lane's own
    }
    if (gate_width == 1) {
      const double total = lanes.sum(row);  // every lane gets it: only the leader adds it
      if (lanes.leader()) dgate[0] += total;
    }
  }
};

// 1 or d: the gate's values; anything else is a declaration error.
template <class T>
int gate_width(const Backbone<T>& net, int gate_id) {
  const int64_t size = net.layout().spec(gate_id).size();
  DB_REQUIRE(size == 1 || size == net.d(), "gate " + net.layout().spec(gate_id).name + " has " +
                                               std::to_string(size) + " values, not 1 or d");
  return int(size);
}

// out = x + g ⊙ y over [rows, d] in the backbone's memory; gate_id a parameter of 1 or d values.
template <class T>
void gated_add_forward(Backbone<T>& net, int gate_id, T* out, const T* x, const T* y) {
  const int width = gate_width(net, gate_id);
  for_each_row_element(net.ops().space(), net.rows(), net.d(),
                       GatedAdd<T>{out, x, net.value(gate_id), y, net.d(), width});
}

// dy = g ⊙ dout (overwritten) and the gate's gradient (added); ∂/∂x is dout itself.
template <class T>
void gated_add_backward(Backbone<T>& net, int gate_id, T* dy, const T* dout, const T* y) {
  const int width = gate_width(net, gate_id);
  SumTargets<T> dgate;
  dgate.add(net.grad(gate_id), width);
  for_each_row_sum_lanes(net.ops().space(), net.rows(), dgate,
                         GatedAddBackward<T>{dy, dout, net.value(gate_id), y, net.d(), width});
}

// path_weights (design.hpp) of a single stream whose sublayer k adds gate_k ⊙ F_k: source s
// (0 the embedding, weight 1; 1 + k sublayer k, weight the mean of its gate, read from the
// device) reaches every consumer c ≥ s with that weight, as nothing later rescales the stream.
// A skipped block's sublayers are NaN as sources and consumers. gate_of(k): the gate's id.
template <class T, class GateOf>
std::vector<double> gated_stream_path_weights(const Backbone<T>& net, const GateOf& gate_of) {
  const int sublayers = 2 * net.n_layer(), n = sublayers + 1;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> source_weight(n, 1.0);
  std::vector<bool> skipped(n, false);  // by source index (1 + k), also the consumer index k
  for (int k = 0; k < sublayers; ++k) {
    if (net.skipped(k / 2)) {
      skipped[1 + k] = true;
      continue;
    }
    const std::vector<double> g = net.value_to_host(gate_of(k));
    double sum = 0;
    for (double v : g) sum += v;
    source_weight[1 + k] = sum / double(g.size());
  }
  std::vector<double> w(size_t(n) * n, nan);
  for (int s = 0; s < n; ++s)
    for (int c = s; c < n; ++c)
      if (!skipped[s] && (c == sublayers || !skipped[1 + c]))
        w[size_t(s) * n + c] = source_weight[s];
  return w;
}

}  // namespace db
