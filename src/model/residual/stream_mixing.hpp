// What the multi-stream designs (HC §7, mHC §8) expose for the diagnostics' effective rank
// (diagnostics.md §4): the per-token n×n stream maps of the last forward pass.
//
// Convention: M_k maps the state entering sublayer k to the state leaving it, apart from the
// branch term: new_state[i] = Σ_j M_k[i][j] · state[j] + (branch output)·b[i]. So
//   HC:  M_k = A_kᵀ  (H'[j] = Σ_s A_k[s][j]·H[s]),   mHC: M_k = H_res,k.
// The composed residual map of the span of sublayers i..j is M_j ⋯ M_i. For HC that is
// (A_i ⋯ A_j)ᵀ, whose singular values (hence effective rank) are those of the spec's A_i ⋯ A_j;
// for mHC it is H_res,j ⋯ H_res,i, the order in which the maps act.
// A skipped block's two sublayers have M_k = I (the whole state passes unchanged).
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

namespace db {

struct StreamMixing {
  int n = 0;           // streams
  int sublayers = 0;   // 2L, indexed by position k = 2p (attention), 2p + 1 (FFN)
  int64_t tokens = 0;  // rows of the last forward
  // maps[((k · tokens) + t) · n² + i · n + j] = M_k[i][j] for token t.
  std::vector<double> maps;

  const double* map(int k, int64_t t) const { return maps.data() + (k * tokens + t) * n * n; }
};

// Implemented by designs that have stream maps; the diagnostics find it with
// dynamic_cast<const StreamMixingSource*>(&model.design()).
class StreamMixingSource {
 public:
  virtual ~StreamMixingSource() = default;
  virtual StreamMixing stream_mixing() const = 0;
};

// The stream maps of the last forward of K sublayers over `rows` tokens: the identity where a
// sublayer did not run, else fill(k, t, map, a, b) writes M_k (n×n), a_k and b_k (n each) of
// token t. in/out (optional) receive a_k and b_k as [K, rows, n]; a and b are null without them.
template <class Fill>
StreamMixing gather_stream_maps(int n, int K, int64_t rows, const std::vector<bool>& ran,
                                std::vector<double>* in, std::vector<double>* out, Fill fill) {
  StreamMixing m;
  m.n = n;
  m.sublayers = K;
  m.tokens = rows;
  m.maps.assign(size_t(K) * rows * n * n, 0.0);
  if (in) in->assign(size_t(K) * rows * n, 0.0);
  if (out) out->assign(size_t(K) * rows * n, 0.0);
  for (int k = 0; k < K; ++k)
    for (int64_t t = 0; t < rows; ++t) {
      double* map = &m.maps[(k * rows + t) * n * n];
      if (!ran[k]) {
        for (int i = 0; i < n; ++i) map[i * n + i] = 1.0;
        continue;
      }
      fill(k, t, map, in ? &(*in)[(k * rows + t) * n] : nullptr,
           out ? &(*out)[(k * rows + t) * n] : nullptr);
    }
  return m;
}

// The composed map M_j ⋯ M_i (i ≤ j) of token t, n×n row-major.
inline std::vector<double> composed_stream_map(const StreamMixing& s, int i, int j, int64_t t) {
  const int n = s.n;
  std::vector<double> acc(n * n, 0.0), next(n * n);
  for (int a = 0; a < n; ++a) acc[a * n + a] = 1.0;
  for (int k = i; k <= j; ++k) {
    const double* m = s.map(k, t);
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b) {
        double sum = 0;
        for (int c = 0; c < n; ++c) sum += m[a * n + c] * acc[c * n + b];
        next[a * n + b] = sum;
      }
    acc.swap(next);
  }
  return acc;
}

}  // namespace db

namespace db {

// Residual path weights of a multi-stream design (diagnostics.md §4) in the layout of
// ResidualDesign::path_weights ([sources × consumers], sources = embedding then sublayer outputs,
// consumers = sublayer inputs then the readout): per token, the branch output of sublayer i
// enters the state with weights b_i, is carried by the maps M_{i+1}, …, M_{l−1} and read by
// sublayer l with input weights a_l: w(i→l) = a_l · M_{l−1} ⋯ M_{i+1} b_i (= the spec's
// b_iᵀ A_{i+1} ⋯ A_{l−1} a_l for HC); the embedding starts as the all-ones vector. The readout
// reads the state with `readout` (HC and mHC: 1/n, the mean of the streams).
// Values are averaged over tokens; NaN where the source is not earlier, or where a skipped
// sublayer neither writes nor reads.
// in_weights/out_weights: [sublayers, tokens, n] (a_k and b_k); ran[k]: sublayer k ran.
inline std::vector<double> stream_path_weights(const StreamMixing& s,
                                               const std::vector<double>& in_weights,
                                               const std::vector<double>& out_weights,
                                               const std::vector<bool>& ran,
                                               const std::vector<double>& readout) {
  const int n = s.n, K = s.sublayers, consumers = K + 1;
  std::vector<double> w(size_t(K + 1) * consumers, 0.0), v(n), next(n);
  for (int64_t t = 0; t < s.tokens; ++t) {
    for (int src = 0; src <= K; ++src) {
      if (src > 0 && !ran[src - 1]) continue;
      for (int j = 0; j < n; ++j)
        v[j] = src == 0 ? 1.0 : out_weights[((src - 1) * s.tokens + t) * n + j];
      for (int l = src; l < K; ++l) {
        if (!ran[l]) continue;  // a skipped sublayer: the state passes unchanged
        const double* a = &in_weights[(l * s.tokens + t) * n];
        double dot = 0;
        for (int j = 0; j < n; ++j) dot += a[j] * v[j];
        w[size_t(src) * consumers + l] += dot;
        const double* m = s.map(l, t);
        for (int i = 0; i < n; ++i) {
          double sum = 0;
          for (int j = 0; j < n; ++j) sum += m[i * n + j] * v[j];
          next[i] = sum;
        }
        v.swap(next);
      }
      double dot = 0;
      for (int j = 0; j < n; ++j) dot += readout[j] * v[j];
      w[size_t(src) * consumers + K] += dot;
    }
  }
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int src = 0; src <= K; ++src)
    for (int c = 0; c < consumers; ++c) {
      double& x = w[size_t(src) * consumers + c];
      const bool valid = src <= c && (src == 0 || ran[src - 1]) && (c == K || ran[c]);
      x = valid ? x / double(s.tokens) : nan;
    }
  return w;
}

}  // namespace db
