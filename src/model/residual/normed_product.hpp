// The coefficient product of HC (§7) and mHC (§8), z = RMSNorm(x; gain)·W, computed from x itself:
// since RMSNorm(x)[r, e] = gain[e]·x[r, e]·rstd[r],
//   z[r, c] = rstd[r]·Σ_e x[r, e]·(gain[e]·W[e, c]),
// so the product reads the state x (the n streams) with the gain folded into the small weight
// matrix, and scales each row by its rstd afterwards. The normalised rows are never written,
// kept or read back (HC: [rows·n, d], mHC: [rows, n·d] per sublayer; doc/performance.md, "HC/mHC
// coefficient products from the streams"). Its backward likewise needs no stored gradient of the
// normalised rows:
//   G = xᵀ·(rstd ⊙ dz)                    [width, m], one product;
//   ∂W[e, c] += gain[e]·G[e, c],  ∂gain[e] += Σ_c W[e, c]·G[e, c];
//   ∂x[r, e] += rstd·dn[e] − rstd³/width·x[r, e]·Σ_e' dn[e']·x[r, e'],
//   dn[e] = Σ_c dz[r, c]·gain[e]·W[e, c]
// (RMSNorm's backward with dn = gain ⊙ ∂/∂RMSNorm(x), formed per row from dz's m values while
// gain ⊙ W is small, dn_from_rows).
// W is given as up to two column blocks [A | B] (HC: W_α and W_β; mHC: φ alone).
#pragma once
#include <cmath>
#include <cstdint>

#include "core/buffer.hpp"
#include "core/host_device.hpp"
#include "ops/launch.hpp"
#include "ops/ops.hpp"

namespace db {

namespace normed_product_kernels {

// RMSNorm's rstd 1/√(mean x² + eps) of a row of `width` values whose squares sum to sum_sq.
DB_HD double rstd_from_sum_squares(double sum_sq, int width, double eps) {
  using std::sqrt;
  return 1.0 / sqrt(sum_sq / width + eps);
}

// RMSNorm's rstd of row r: 1/√(mean_e x[r, e]² + eps), summed as the backends' RMSNorm forward.
// The HC/mHC mix computes it the same way from its output (stream_kernels.hpp MixRstd).
template <class T>
struct RowRstd {
  T* rstd;
  const T* x;
  int width;
  double eps;
  template <class Lanes>
  DB_HD void operator()(int64_t r, const Lanes& lanes) const {
    const T* xr = x + r * width;
    double sum_sq = 0;
    for (int e = lanes.first(); e < width; e += lanes.step()) sum_sq += double(xr[e]) * xr[e];
    const T value = T(rstd_from_sum_squares(lanes.sum(sum_sq), width, eps));
    if (lanes.leader()) rstd[r] = value;
  }
};

// The gain folded into the weights: gw[e, c] = gain[e]·[A | B][e, c] (A [width, ca], B [width,
// cb]).
template <class T>
struct FoldGain {
  T* gw;
  const T *gain, *a, *b;
  int ca, cb;
  DB_HD void operator()(int64_t e, int c) const {
    const T w = c < ca ? a[e * ca + c] : b[e * cb + c - ca];
    gw[e * (ca + cb) + c] = gain[e] * w;
  }
};

// out[r, c] = rstd[r]·z[r, c] (out may be z).
template <class T>
struct ScaleRows {
  T* out;
  const T *z, *rstd;
  int m;
  DB_HD void operator()(int64_t r, int c) const { out[r * m + c] = rstd[r] * z[r * m + c]; }
};

// The weight and gain gradients of one row e of W from G = xᵀ·(rstd ⊙ dz) (accumulated):
// ∂[A | B][e, c] += gain[e]·G[e, c], ∂gain[e] += Σ_c [A | B][e, c]·G[e, c].
template <class T>
struct WeightGrads {
  T *da, *db, *dgain;
  const T *G, *gain, *a, *b;
  int ca, cb;
  DB_HD void operator()(int64_t e) const {
    const T* Ge = G + e * (ca + cb);
    double sum = 0;
    for (int c = 0; c < ca; ++c) {
      sum += double(a[e * ca + c]) * Ge[c];
      da[e * ca + c] += gain[e] * Ge[c];
    }
    for (int c = 0; c < cb; ++c) {
      sum += double(b[e * cb + c]) * Ge[ca + c];
      db[e * cb + c] += gain[e] * Ge[ca + c];
    }
    dgain[e] += T(sum);
  }
};

// A second gradient that InputGrad adds into the same ∂x in its pass, instead of a pass of its
// own that reads and writes ∂x: the HC/mHC combine's input gradient (x_in = Σ_s w_ts·x[t, s]),
// ∂x[t, s, e] += w_ts·∂x_in[t, e] with w_ts = weights[(t·n + s)·stride], where x is the n-stream
// state [tokens, n, d] seen as rows of `width` values (HC: width d, a row per stream; mHC: n·d,
// a row per token). dx_in null: none.
template <class T>
struct CombineInputTerm {
  const T *dx_in = nullptr, *weights = nullptr;
  int stride = 0, n = 0, d = 0;
  // The term at value e of row r.
  DB_HD T at(int64_t r, int width, int e) const {
    const int64_t first = r * (width / d);  // the row's first (token, stream) index
    const int s = e / d, value = e - s * d;
    return weights[(first + s) * stride] * dx_in[(first / n) * d + value];
  }
};

// The input gradient of one row r (a warp on a GPU), added into dx: RMSNorm's backward as
// cpu::rmsnorm_backward computes it, from dn[r, e] = Σ_c dz[r, c]·gw[e, c] (the gain is in gw).
// dn is read from `dn` when given (formed by a product), else formed here twice per value from
// gw (m multiply-adds each), which must then be small enough to stay in cache (dn_from_rows).
// With a combine term, dx[r, e] first gets the term, then the norm's gradient, as the combine's
// backward followed by this one would add them.
template <class T>
struct InputGrad {
  T* dx;
  const T *dn, *dz, *x, *gw, *rstd;
  int width, m;
  CombineInputTerm<T> combine = {};
  DB_HD T dn_at(int64_t r, int e) const {
    if (dn) return dn[r * width + e];
    const T* dzr = dz + r * m;
    T sum = T(0);
    for (int c = 0; c < m; ++c) sum += dzr[c] * gw[e * m + c];
    return sum;
  }
  template <class Lanes>
  DB_HD void operator()(int64_t r, const Lanes& lanes) const {
    const T* xr = x + r * width;
    double dot = 0;
    for (int e = lanes.first(); e < width; e += lanes.step()) dot += double(dn_at(r, e)) * xr[e];
    const double rs = rstd[r];
    const double coef = rs * rs * rs * lanes.sum(dot) / width;
    T* dxr = dx + r * width;
    if (combine.dx_in) {
      for (int e = lanes.first(); e < width; e += lanes.step()) {
        T value = dxr[e];
        value += combine.at(r, width, e);
        value += T(rs * dn_at(r, e) - coef * xr[e]);
        dxr[e] = value;
      }
      return;
    }
    for (int e = lanes.first(); e < width; e += lanes.step())
      dxr[e] += T(rs * dn_at(r, e) - coef * xr[e]);
  }
};

}  // namespace normed_product_kernels

// The weights of one product: W = [A | B] (b null and cb = 0: W = A), the norm's gain, and their
// gradients (accumulated by the backward).
template <class T>
struct NormedWeights {
  const T *gain, *a, *b;
  int ca, cb;
  T *dgain, *da, *db;
  int columns() const { return ca + cb; }
};

// rstd [rows] = RMSNorm's rstd of each row of x [rows, width] (overwritten).
template <class T>
void row_rstds(MemorySpace space, T* rstd, const T* x, int64_t rows, int width, double eps) {
  for_each_row_lanes(space, rows, normed_product_kernels::RowRstd<T>{rstd, x, width, eps});
}

// z [rows, m] = RMSNorm(x)·W for x [rows, width] from x's row rstd [rows] (row_rstds, or the
// HC/mHC mix that wrote x: stream_kernels.hpp MixRstd), which the backward reads too; gw
// [width, m] scratch (the gain folded into W).
template <class T>
void normed_product_forward(Ops<T>& ops, T* z, const T* rstd, Buffer<T>& gw, const T* x,
                            int64_t rows, int width, const NormedWeights<T>& w) {
  namespace k = normed_product_kernels;
  const int m = w.columns();
  gw.resize(size_t(width) * m);
  for_each_row_element(ops.space(), width, m,
                       k::FoldGain<T>{gw.data(), w.gain, w.a, w.b, w.ca, w.cb});
  ops.gemm(false, false, int(rows), m, width, T(1), x, width, gw.data(), m, T(0), z, m);
  for_each_row_element(ops.space(), rows, m, k::ScaleRows<T>{z, z, rstd, m});
}

// Whether InputGrad forms dn per row (true) or reads it from a product. Per row it costs 2m
// multiply-adds per value and reads gain ⊙ W [width, m] for every row of x, so both must be
// small: m ≤ 8 (HC: n + 2) and at most 16 384 values (64 KB in float, which a GPU SM's L1 holds
// next to its warps' rows; HC: 24 KB at d = 1024). mHC (m = n² + 2n, φ 384 KB at n = 4,
// d = 1024) would re-read φ from L2 for every token, more than the stored dn costs in DRAM, and
// on the CPU its scalar loops cost more than the BLAS product: dn is then formed by a product.
inline bool dn_from_rows(int width, int m) {
  return m <= 8 && int64_t(width) * m <= 16384;
}

// Its backward from dz [rows, m]: the gradients of W and the gain accumulated, ∂x added into dx,
// with `combine`'s term (HC/mHC's combine input gradient, when given) in the same pass.
// gw, dzs [rows, m], G [width, m] and dn [rows, width] (unless dn_from_rows): scratch.
template <class T>
void normed_product_backward(Ops<T>& ops, T* dx, const T* dz, const T* x, const T* rstd,
                             int64_t rows, int width, const NormedWeights<T>& w, Buffer<T>& gw,
                             Buffer<T>& dzs, Buffer<T>& G, Buffer<T>& dn,
                             const normed_product_kernels::CombineInputTerm<T>& combine = {}) {
  namespace k = normed_product_kernels;
  const int m = w.columns();
  dzs.resize(size_t(rows) * m);
  G.resize(size_t(width) * m);
  gw.resize(size_t(width) * m);
  for_each_row_element(ops.space(), rows, m, k::ScaleRows<T>{dzs.data(), dz, rstd, m});
  ops.gemm(true, false, width, m, int(rows), T(1), x, width, dzs.data(), m, T(0), G.data(), m);
  for_each_index(ops.space(), width,
                 k::WeightGrads<T>{w.da, w.db, w.dgain, G.data(), w.gain, w.a, w.b, w.ca, w.cb});
  for_each_row_element(ops.space(), width, m,
                       k::FoldGain<T>{gw.data(), w.gain, w.a, w.b, w.ca, w.cb});
  const bool from_rows = dn_from_rows(width, m);
  if (!from_rows) {
    dn.resize(size_t(rows) * width);
    ops.gemm(false, true, int(rows), width, m, T(1), dz, m, gw.data(), m, T(0), dn.data(), width);
  }
  for_each_row_lanes(ops.space(), rows,
                     k::InputGrad<T>{dx, from_rows ? nullptr : dn.data(), dz, x, gw.data(), rstd,
                                     width, m, combine});
}

}  // namespace db
