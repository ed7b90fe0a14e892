// The arithmetic of the n-stream state [rows, n, d] of HC (§7) and mHC (§8), stream-major per
// token: DB_HD functors launched through ops/launch.hpp, so the CPU loop and the CUDA kernel run
// the same body. Each functor computes one output value (or one token's few values) from that
// token's data; sums run in a fixed order (streams ascending), with double accumulators for the
// d-long dot products, so results do not depend on the thread count. The dot products share
// their row among lanes (a warp on a GPU, one lane on the host: ops/launch.hpp).
#pragma once
#include <cmath>
#include <cstdint>

#include "core/device_unroll.hpp"
#include "core/host_device.hpp"
#include "model/residual/normed_product.hpp"
#include "ops/launch.hpp"

namespace db {

// Where the coefficients of a per-token n×n stream map sit: M(r, i, j) — the weight of input
// stream j in output stream i of token r — is mix[r·row + i·out + j·in + offset].
// HC (§7): mix = α [rows, n, n+1], M(r,i,j) = α[r, j, 1+i]: {row n(n+1), out 1, in n+1, offset 1}.
// mHC (§8): mix = H_res [rows, n, n], M(r,i,j) = H_res[r, i, j]: {row n², out n, in 1, offset 0}.
struct StreamMapLayout {
  int64_t row;
  int out, in, offset;
  DB_HD int64_t at(int64_t r, int i, int j) const { return r * row + i * out + j * in + offset; }
};

namespace stream_kernels {

// ⟨a, b⟩ over `count` values shared by `lanes` (ops/launch.hpp): every lane gets it.
template <class T, class Lanes>
DB_HD T dot(const T* a, const T* b, int count, const Lanes& lanes) {
  double sum = 0;
  for (int e = lanes.first(); e < count; e += lanes.step()) sum += double(a[e]) * b[e];
  return T(lanes.sum(sum));
}

// state[r, s, e] = x[r, e].
template <class T>
struct Broadcast {
  T* state;
  const T* x;
  int n, d;
  DB_HD void operator()(int64_t rs, int e) const { state[rs * d + e] = x[(rs / n) * d + e]; }
};

// out[r, e] = scale·Σ_s state[r, s, e].
template <class T>
struct Sum {
  T* out;
  const T* state;
  T scale;
  int n, d;
  DB_HD void operator()(int64_t r, int e) const {
    T sum = T(0);
    for (int s = 0; s < n; ++s) sum += state[(r * n + s) * d + e];
    out[r * d + e] = scale == T(1) ? sum : T(sum * scale);
  }
};

// x[r, e] = Σ_s w_rs·H[r, s, e], w_rs = weights[(r·n + s)·stride].
template <class T>
struct Combine {
  T* x;
  const T *H, *weights;
  int stride, n, d;
  DB_HD void operator()(int64_t r, int e) const {
    T sum = T(0);
    for (int s = 0; s < n; ++s) sum += weights[(r * n + s) * stride] * H[(r * n + s) * d + e];
    x[r * d + e] = sum;
  }
};

// Combine followed by the sublayer's pre-norm, one row r (a warp on a GPU): x[r] = Σ_s w_rs·H[r, s]
// as Combine, rstd[r] = 1/√(mean_e x[r, e]² + eps) and u[r, e] = gain[e]·x[r, e]·rstd[r] (no gain:
// 1) as the backends' RMSNorm forward. The sum of squares takes each combined value from its
// register, and the output loop reads back only the values its own lane has just written (a
// cache hit), not a row that a second kernel loads again. x and rstd are kept for the norm's
// backward. On the host the sums run in the order of Combine and of cpu::rmsnorm_forward, so the
// bits are theirs.
template <class T>
struct CombineNorm {
  T *x, *u, *rstd;
  const T *H, *weights, *gain;
  int stride, n, d;
  double eps;
  template <class Lanes>
  DB_HD void operator()(int64_t r, const Lanes& lanes) const {
    using std::sqrt;
    T* xr = x + r * d;
    double sum_sq = 0;
    for (int e = lanes.first(); e < d; e += lanes.step()) {
      T sum = T(0);
      for (int s = 0; s < n; ++s) sum += weights[(r * n + s) * stride] * H[(r * n + s) * d + e];
      xr[e] = sum;
      sum_sq += double(sum) * sum;
    }
    const T r_std = T(1.0 / sqrt(lanes.sum(sum_sq) / d + eps));
    if (lanes.leader()) rstd[r] = r_std;
    T* ur = u + r * d;
    for (int e = lanes.first(); e < d; e += lanes.step())
      ur[e] = (gain ? gain[e] : T(1)) * xr[e] * r_std;
  }
};

// Combine's weight gradient, one (r, s) (a warp on a GPU): dweights[(r·n + s)·stride] =
// ⟨dx[r], H[r, s]⟩.
template <class T>
struct CombineWeightGrad {
  T* dweights;
  const T *dx, *H;
  int stride, n, d;
  template <class Lanes>
  DB_HD void operator()(int64_t rs, const Lanes& lanes) const {
    const T value = dot(dx + (rs / n) * d, H + rs * d, d, lanes);
    if (lanes.leader()) dweights[rs * stride] = value;
  }
};

// Combine's input gradient, one (r, s, e): dH[r, s, e] += w_rs·dx[r, e].
template <class T>
struct CombineInputGrad {
  T* dH;
  const T *dx, *weights;
  int stride, n, d;
  DB_HD void operator()(int64_t rs, int e) const {
    dH[rs * d + e] += weights[rs * stride] * dx[(rs / n) * d + e];
  }
};

// out[r, i, e] = post[r·n + i]·y[r, e] + Σ_j M(r, i, j)·H[r, j, e].
template <class T>
struct Mix {
  T* out;
  const T *H, *y, *post, *mix;
  StreamMapLayout map;
  int n, d;
  // The value of out[ri, e] (ri = r·n + i).
  DB_HD T value(int64_t ri, int e) const {
    const int64_t r = ri / n;
    const int i = int(ri % n);
    T value = post[ri] * y[r * d + e];
    for (int j = 0; j < n; ++j) value += mix[map.at(r, i, j)] * H[(r * n + j) * d + e];
    return value;
  }
  DB_HD void operator()(int64_t ri, int e) const { out[ri * d + e] = value(ri, e); }
};

// Mix, and the rstd of the next sublayer's stream norm over its output (train.fused_kernels;
// normed_product.hpp), one norm row q (a warp on a GPU). A norm row is `streams` consecutive
// output streams of a token, width = streams·d values: HC 1 (a row per (token, stream)), mHC n (a
// row per token). Each lane writes its values of the row as Mix writes them, then sums their
// squares reading back only what it has just written (from cache, L1 or L2, not a pass over the
// state in DRAM), so the next sublayer need not read the state for its rstd. The second loop is
// RowRstd's over the stored values, in its order (value e of the row at lane e mod step,
// ascending; the same lane sum and rstd expression): on the host the same bits as RowRstd, on a
// GPU too when d is a multiple of the warp's 32 lanes (else the lanes' shares differ at the
// streams' borders, a rounding). Computing the two in one loop would leave the bits to the
// compiler's contraction of a·b + c into fused multiply-adds, which it decides per loop.
template <class T>
struct MixRstd {
  Mix<T> mix;
  T* rstd;
  int streams;
  double eps;
  template <class Lanes>
  DB_HD void operator()(int64_t q, const Lanes& lanes) const {
    const int d = mix.d;
    T* row = mix.out + q * streams * d;
    for (int s = 0; s < streams; ++s)
      for (int e = lanes.first(); e < d; e += lanes.step())
        row[s * d + e] = mix.value(q * streams + s, e);
    double sum_sq = 0;
    for (int s = 0; s < streams; ++s)
      for (int e = lanes.first(); e < d; e += lanes.step())
        sum_sq += double(row[s * d + e]) * row[s * d + e];
    const T value =
        T(normed_product_kernels::rstd_from_sum_squares(lanes.sum(sum_sq), streams * d, eps));
    if (lanes.leader()) rstd[q] = value;
  }
};

// Mix's gradients from g = ∂/∂out, one (r, e): dy[r, e] = Σ_i post_ri·g[r, i, e] and
// dH[r, j, e] = Σ_i M(r, i, j)·g[r, i, e] for every j.
template <class T>
struct MixValueGrads {
  T *dy, *dH;
  const T *g, *post, *mix;
  StreamMapLayout map;
  int n, d;
  DB_HD void operator()(int64_t r, int e) const {
    const T* gr = g + r * n * d;
    T sum = T(0);
    for (int i = 0; i < n; ++i) sum += post[r * n + i] * gr[i * d + e];
    dy[r * d + e] = sum;
    for (int j = 0; j < n; ++j) {
      T dh = T(0);
      for (int i = 0; i < n; ++i) dh += mix[map.at(r, i, j)] * gr[i * d + e];
      dH[(r * n + j) * d + e] = dh;
    }
  }
};

// Mix's coefficient gradients, one (r, i) (a warp on a GPU): dpost[r·n + i] = ⟨g[r, i], y[r]⟩
// and dmix at M(r, i, j)'s place = ⟨g[r, i], H[r, j]⟩ (other dmix entries are left alone).
template <class T>
struct MixCoefficientGrads {
  T *dpost, *dmix;
  const T *g, *H, *y;
  StreamMapLayout map;
  int n, d;
  template <class Lanes>
  DB_HD void operator()(int64_t ri, const Lanes& lanes) const {
    const int64_t r = ri / n;
    const int i = int(ri % n);
    const T* gi = g + ri * d;
    const T post = dot(gi, y + r * d, d, lanes);
    if (lanes.leader()) dpost[ri] = post;
    for (int j = 0; j < n; ++j) {
      const T value = dot(gi, H + (r * n + j) * d, d, lanes);
      if (lanes.leader()) dmix[map.at(r, i, j)] = value;
    }
  }
};

// The most streams MixGrads takes: each lane keeps n + n² double sums (20 at n = 4), which must
// stay in a GPU thread's registers; at n = 8 (72 sums, 144 registers) they would spill to
// local memory. Beyond it mix_streams_backward runs the two passes above.
inline constexpr int kMaxMixGradStreams = 4;

// MixValueGrads and MixCoefficientGrads in one pass over token r (a warp on a GPU; n ≤
// kMaxMixGradStreams): each g[r, i, e] is read once for dy, dH, dpost and dmix, and H[r, j, e]
// and y[r, e] once for the n + n² dot products, which each lane sums side by side. Every value
// is computed by the expression of the two passes, and each dot product still sums e in
// ascending order per lane before lanes.sum (one lane on the host; on a GPU the same warp sums as
// dot()). Only the compiler's contraction of a·b + c into one fused multiply-add, which it decides
// per loop (-march=x86-64-v3 has FMA, and GCC contracts by default), can tell the results apart:
// a rounding of the last bit here and there (built with -ffp-contract=off they are the same bits).
template <class T>
struct MixGrads {
  T *dy, *dH, *dpost, *dmix;
  const T *g, *H, *y, *post, *mix;
  StreamMapLayout map;
  int n, d;
  template <class Lanes>
  DB_HD void operator()(int64_t r, const Lanes& lanes) const {
    constexpr int N = kMaxMixGradStreams;
    const T* gr = g + r * n * d;
    const T* Hr = H + r * n * d;
    T p[N], m[N][N];                   // post_i and M(r, i, j)
    double dp[N] = {}, dm[N][N] = {};  // this lane's part of dpost_i and of dmix at M(r, i, j)
    DB_DEVICE_UNROLL
    for (int i = 0; i < N; ++i) {
      if (i >= n) break;
      p[i] = post[r * n + i];
      DB_DEVICE_UNROLL
      for (int j = 0; j < N; ++j) {
        if (j >= n) break;
        m[i][j] = mix[map.at(r, i, j)];
      }
    }
    for (int e = lanes.first(); e < d; e += lanes.step()) {
      T gi[N];
      DB_DEVICE_UNROLL
      for (int i = 0; i < N; ++i) {
        if (i >= n) break;
        gi[i] = gr[i * d + e];
      }
      T sum = T(0);
      DB_DEVICE_UNROLL
      for (int i = 0; i < N; ++i) {
        if (i >= n) break;
        sum += p[i] * gi[i];
      }
      dy[r * d + e] = sum;
      const T ye = y[r * d + e];
      DB_DEVICE_UNROLL
      for (int i = 0; i < N; ++i) {
        if (i >= n) break;
        dp[i] += double(gi[i]) * ye;
      }
      DB_DEVICE_UNROLL
      for (int j = 0; j < N; ++j) {
        if (j >= n) break;
        T dh = T(0);
        DB_DEVICE_UNROLL
        for (int i = 0; i < N; ++i) {
          if (i >= n) break;
          dh += m[i][j] * gi[i];
        }
        dH[(r * n + j) * d + e] = dh;
        const T hj = Hr[j * d + e];
        DB_DEVICE_UNROLL
        for (int i = 0; i < N; ++i) {
          if (i >= n) break;
          dm[i][j] += double(gi[i]) * hj;
        }
      }
    }
    DB_DEVICE_UNROLL
    for (int i = 0; i < N; ++i) {
      if (i >= n) break;
      const T value = T(lanes.sum(dp[i]));
      if (lanes.leader()) dpost[r * n + i] = value;
      DB_DEVICE_UNROLL
      for (int j = 0; j < N; ++j) {
        if (j >= n) break;
        const T coefficient = T(lanes.sum(dm[i][j]));
        if (lanes.leader()) dmix[map.at(r, i, j)] = coefficient;
      }
    }
  }
};

}  // namespace stream_kernels

// --- the calls the designs make (space: where every pointer lives, ops.space()) --------------

// state[r, s] = x[r] for every stream s.
template <class T>
void broadcast_streams(MemorySpace space, T* state, const T* x, int64_t rows, int n, int d) {
  for_each_row_element(space, rows * n, d, stream_kernels::Broadcast<T>{state, x, n, d});
}

// out[r] = scale·Σ_s state[r, s] (overwritten).
template <class T>
void sum_streams(MemorySpace space, T* out, const T* state, T scale, int64_t rows, int n, int d) {
  for_each_row_element(space, rows, d, stream_kernels::Sum<T>{out, state, scale, n, d});
}

// x[r] = Σ_s w_rs·H[r, s], w_rs = weights[(r·n + s)·stride] (overwritten).
template <class T>
void combine_streams(MemorySpace space, T* x, const T* H, const T* weights, int stride,
                     int64_t rows, int n, int d) {
  for_each_row_element(space, rows, d, stream_kernels::Combine<T>{x, H, weights, stride, n, d});
}

// combine_streams, then u[r] = RMSNorm(x[r])·gain (gain null: none) with rstd[r], in one pass
// over each row (CombineNorm); x, u, rstd overwritten.
template <class T>
void combine_streams_rmsnorm(MemorySpace space, T* x, T* u, T* rstd, const T* H, const T* weights,
                             int stride, const T* gain, double eps, int64_t rows, int n, int d) {
  for_each_row_lanes(
      space, rows, stream_kernels::CombineNorm<T>{x, u, rstd, H, weights, gain, stride, n, d, eps});
}

// Its backward: dweights[(r·n + s)·stride] = ⟨dx[r], H[r, s]⟩ (overwritten), dH[r, s] +=
// w_rs·dx[r]. With input_grads false only the weight gradients: the designs add the input
// gradient in the stream norm's backward pass instead (normed_product.hpp CombineInputTerm).
template <class T>
void combine_streams_backward(MemorySpace space, T* dweights, T* dH, const T* dx, const T* H,
                              const T* weights, int stride, int64_t rows, int n, int d,
                              bool input_grads = true) {
  for_each_row_lanes(space, rows * n,
                     stream_kernels::CombineWeightGrad<T>{dweights, dx, H, stride, n, d});
  if (!input_grads) return;
  for_each_row_element(space, rows * n, d,
                       stream_kernels::CombineInputGrad<T>{dH, dx, weights, stride, n, d});
}

// out[r, i] = post[r·n + i]·y[r] + Σ_j M(r, i, j)·H[r, j] (overwritten).
template <class T>
void mix_streams(MemorySpace space, T* out, const T* H, const T* y, const T* post, const T* mix,
                 StreamMapLayout map, int64_t rows, int n, int d) {
  for_each_row_element(space, rows * n, d, stream_kernels::Mix<T>{out, H, y, post, mix, map, n, d});
}

// mix_streams, and rstd[q] of each norm row q of `streams`·d output values (HC: 1, mHC: n) as
// normed_product's RowRstd computes it from out (MixRstd); out and rstd overwritten.
template <class T>
void mix_streams_rstd(MemorySpace space, T* out, T* rstd, const T* H, const T* y, const T* post,
                      const T* mix, StreamMapLayout map, int64_t rows, int n, int d, int streams,
                      double eps) {
  for_each_row_lanes(
      space, rows * n / streams,
      stream_kernels::MixRstd<T>{{out, H, y, post, mix, map, n, d}, rstd, streams, eps});
}

// Its backward from g = ∂/∂out: dy, dpost, the map entries of dmix and dH, all overwritten.
// one_pass (train.fused_kernels): one pass over each token (MixGrads) when n ≤
// kMaxMixGradStreams, else a pass for dy and dH, then one for dpost and dmix, which read g again.
// The same sums in the same order either way (MixGrads: where the last bit may still differ).
template <class T>
void mix_streams_backward(MemorySpace space, bool one_pass, T* dy, T* dpost, T* dmix, T* dH,
                          const T* g, const T* H, const T* y, const T* post, const T* mix,
                          StreamMapLayout map, int64_t rows, int n, int d) {
  if (one_pass && n <= stream_kernels::kMaxMixGradStreams) {
    for_each_row_lanes(
        space, rows,
        stream_kernels::MixGrads<T>{dy, dH, dpost, dmix, g, H, y, post, mix, map, n, d});
    return;
  }
  for_each_row_element(space, rows, d,
                       stream_kernels::MixValueGrads<T>{dy, dH, g, post, mix, map, n, d});
  for_each_row_lanes(space, rows * n,
                     stream_kernels::MixCoefficientGrads<T>{dpost, dmix, g, H, y, map, n, d});
}

}  // namespace db
