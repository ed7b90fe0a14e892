// The n-stream state of HC (§7) and mHC (§8): [rows, n, d], stream-major per token. Shared here:
// how the embedding enters it, how its gradient leaves it, and the readouts into the LM head
// (also used by LogitLens through ResidualDesign::readout_state).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "model/backbone.hpp"

namespace db {

// HC norm_then_sum (authors' code): Σ_s N_final(H[s]); HC sum_then_norm (HC paper):
// N_final(Σ_s H[s]); mHC: N_final(mean_s X[s]).
enum class StreamReadout { norm_then_sum, sum_then_norm, mean_then_norm };

// state[r, s, :] = x[r, :] for every stream s (H_0 = n copies of the embedding).
template <class T>
void copy_to_streams(const T* x, int64_t rows, int n, int d, T* state) {
  for (int64_t r = 0; r < rows; ++r)
    for (int s = 0; s < n; ++s) std::copy(x + r * d, x + (r + 1) * d, state + (r * n + s) * d);
}

// out[r, :] = scale · Σ_s state[r, s, :]
template <class T>
void sum_streams(const T* state, int64_t rows, int n, int d, T* out, double scale = 1.0) {
  for (int64_t r = 0; r < rows; ++r)
    for (int j = 0; j < d; ++j) {
      T sum = 0;
      for (int s = 0; s < n; ++s) sum += state[(r * n + s) * d + j];
      out[r * d + j] = T(sum * scale);
    }
}

template <class T>
void stream_readout_forward(Backbone<T>& net, StreamReadout mode, const T* state, int64_t rows,
                            int n, T* features, NormCache<T>& cache) {
  const int d = net.d(), gain = net.layout().id("final_norm");
  if (mode == StreamReadout::norm_then_sum) {
    std::vector<T> normed(size_t(rows) * n * d);
    net.rmsnorm_forward(gain, state, normed.data(), cache, rows * n, d);
    sum_streams(normed.data(), rows, n, d, features);
    return;
  }
  std::vector<T> reduced(size_t(rows) * d);
  sum_streams(state, rows, n, d, reduced.data(),
              mode == StreamReadout::mean_then_norm ? 1.0 / n : 1.0);
  net.rmsnorm_forward(gain, reduced.data(), features, cache, rows, d);
}

// dstate overwritten.
template <class T>
void stream_readout_backward(Backbone<T>& net, StreamReadout mode, const T* dfeatures, int64_t rows,
                             int n, T* dstate, NormCache<T>& cache) {
  const int d = net.d(), gain = net.layout().id("final_norm");
  if (mode == StreamReadout::norm_then_sum) {
    std::vector<T> dnormed(size_t(rows) * n * d);
    copy_to_streams(dfeatures, rows, n, d, dnormed.data());
    net.rmsnorm_backward(gain, dnormed.data(), dstate, cache, rows * n, d);
    return;
  }
  std::vector<T> dreduced(size_t(rows) * d);
  net.rmsnorm_backward(gain, dfeatures, dreduced.data(), cache, rows, d);
  if (mode == StreamReadout::mean_then_norm)
    for (T& v : dreduced) v /= T(n);
  copy_to_streams(dreduced.data(), rows, n, d, dstate);
}

}  // namespace db
