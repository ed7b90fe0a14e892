// The n-stream state of HC (§7) and mHC (§8): [rows, n, d], stream-major per token. Shared here:
// how the embedding enters it, how its gradient leaves it, and the readouts into the LM head
// (also used by LogitLens through ResidualDesign::readout_state).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/backbone.hpp"
#include "model/residual/stream_kernels.hpp"

namespace db {

// HC norm_then_sum (authors' code): Σ_s N_final(H[s]); HC sum_then_norm (HC paper):
// N_final(Σ_s H[s]); mHC: N_final(mean_s X[s]).
enum class StreamReadout { norm_then_sum, sum_then_norm, mean_then_norm };

template <class T>
void stream_readout_forward(Backbone<T>& net, StreamReadout mode, const T* state, int64_t rows,
                            int n, T* features, NormCache<T>& cache) {
  const int d = net.d(), gain = net.layout().id("final_norm");
  if (mode == StreamReadout::norm_then_sum) {
    Buffer<T> normed(size_t(rows) * n * d);
    net.rmsnorm_forward(gain, state, normed.data(), cache, rows * n, d);
    sum_streams(net.ops().space(), features, normed.data(), T(1), rows, n, d);
    return;
  }
  Buffer<T> reduced(size_t(rows) * d);
  sum_streams(net.ops().space(), reduced.data(), state,
              T(mode == StreamReadout::mean_then_norm ? 1.0 / n : 1.0), rows, n, d);
  net.rmsnorm_forward(gain, reduced.data(), features, cache, rows, d);
}

// dstate overwritten.
template <class T>
void stream_readout_backward(Backbone<T>& net, StreamReadout mode, const T* dfeatures, int64_t rows,
                             int n, T* dstate, NormCache<T>& cache) {
  const int d = net.d(), gain = net.layout().id("final_norm");
  if (mode == StreamReadout::norm_then_sum) {
    Buffer<T> dnormed(size_t(rows) * n * d);
    broadcast_streams(net.ops().space(), dnormed.data(), dfeatures, rows, n, d);
    net.rmsnorm_backward(gain, dnormed.data(), dstate, cache, rows * n, d);
    return;
  }
  Buffer<T> dreduced(size_t(rows) * d);
  net.rmsnorm_backward(gain, dfeatures, dreduced.data(), cache, rows, d);
  if (mode == StreamReadout::mean_then_norm)
    net.ops().axpby(dreduced.data(), T(1.0 / n), dreduced.data(), T(0), rows * d);
  broadcast_streams(net.ops().space(), dstate, dreduced.data(), rows, n, d);
}

}  // namespace db
