// MoDA's depth entries merged into a plain causal attention through the log-sum-exp (spec §6,
// doc/cuda.md "MoDA through the fast attention"): the math of one (token, query head), written
// once as DB_HD functions. The CUDA backend runs the sequence part of MoDA through its fast
// attention (cuDNN or flash) and then these functions, one warp per row
// (ops/cuda/moda_depth_merge.cu); tests/ops/moda_depth_merge_test.cpp runs the same bodies on
// the CPU, after the CPU attention, and gets the CPU's MoDA op back in double.
//
// Forward, with the sequence part's o_seq and lse_seq (softmax over the keys j ≤ t only):
//   s_m = scale·q·K^d_m,   lse = log(exp(lse_seq) + Σ_m exp(s_m)),
//   o   = exp(lse_seq − lse)·o_seq + Σ_m exp(s_m − lse)·V^d_m
// (exp(lse_seq − lse) is the joint softmax's mass on the sequence keys), computed as one online
// softmax that starts from (o_seq, lse_seq) and reads each depth entry once.
// Backward: D = dO·o with the joint o. The sequence part is the plain attention backward given
// the joint o and lse: its P = exp(S − lse) are then the joint probabilities and
// dS = P∘(dP − D) is exact. The depth part, added here:
//   p_m = exp(s_m − lse), ds_m = p_m·(dO·V^d_m − D),
//   dq += scale·Σ_m ds_m·K^d_m,  dK^d_m += scale·ds_m·q,  dV^d_m += p_m·dO.
//
// Layouts as Ops::moda_attention_* (ops/cpu/moda_attention.hpp): q, o [B, T, H, hd]; depth entry
// m of row n, kv head g at ((n·depth_stride + m)·H_kv + g)·hd; lse [B, H, T]; query head h reads
// kv head h / (H / H_kv).
#pragma once
#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"
#include "ops/lanes.hpp"
#include "ops/shapes.hpp"

namespace db::moda_merge {

// The largest head dim of a row: a warp holds 8 values per lane.
constexpr int kMaxHeadDim = 256;

// One row's hd values are spread over the threads that work on it (ops/lanes.hpp): a thread
// takes values e = lanes.first() + Lanes::kCount·c, c < kValues, and lanes.sum() adds a partial
// over them (every thread gets the total). The CPU is one lane (HostLanes); the CUDA kernels use
// a warp (WarpLanes, ops/cuda/moda_depth_merge.cu).
template <class Lanes>
constexpr int kValues = kMaxHeadDim / Lanes::kCount;

// Loops over a thread's values: unrolled on the GPU (device pass only: the host compiler does
// not know the pragma), so that LaneValues stay in registers.
#if defined(__CUDA_ARCH__)
#define DB_MODA_UNROLL _Pragma("unroll")
#else
#define DB_MODA_UNROLL
#endif

// This thread's values of one head vector, in the accumulator type A (values past hd: unset,
// never read).
template <class A, class Lanes>
struct LaneValues {
  A x[kValues<Lanes>];
  template <class V>
  DB_HD void load(const Lanes& lanes, const V* src, int hd, A factor = A(1)) {
    DB_MODA_UNROLL
    for (int c = 0; c < kValues<Lanes>; ++c) {
      const int e = lanes.first() + Lanes::kCount * c;
      if (e >= hd) break;
      x[c] = factor * A(src[e]);
    }
  }
  // ⟨this, other⟩ over the whole row (every thread gets it).
  template <class V>
  DB_HD A dot(const Lanes& lanes, const V* other, int hd) const {
    A part = 0;
    DB_MODA_UNROLL
    for (int c = 0; c < kValues<Lanes>; ++c) {
      const int e = lanes.first() + Lanes::kCount * c;
      if (e >= hd) break;
      part += x[c] * A(other[e]);
    }
    return lanes.sum(part);
  }
  // this = keep·this + weight·other
  template <class V>
  DB_HD void scale_add(const Lanes& lanes, A keep, A weight, const V* other, int hd) {
    DB_MODA_UNROLL
    for (int c = 0; c < kValues<Lanes>; ++c) {
      const int e = lanes.first() + Lanes::kCount * c;
      if (e >= hd) break;
      x[c] = keep * x[c] + weight * A(other[e]);
    }
  }
  DB_HD void scale(const Lanes& lanes, A factor, int hd) {
    DB_MODA_UNROLL
    for (int c = 0; c < kValues<Lanes>; ++c) {
      const int e = lanes.first() + Lanes::kCount * c;
      if (e >= hd) break;
      x[c] *= factor;
    }
  }
  template <class V>
  DB_HD void store(const Lanes& lanes, V* dst, int hd) const {
    DB_MODA_UNROLL
    for (int c = 0; c < kValues<Lanes>; ++c) {
      const int e = lanes.first() + Lanes::kCount * c;
      if (e >= hd) break;
      dst[e] = V(x[c]);
    }
  }
};

// Addresses in the layouts above.
DB_HD int64_t query_offset(const ModaShape& s, int64_t n, int h) {
  return (n * s.heads + h) * int64_t(s.head_dim);
}
DB_HD int64_t depth_offset(const ModaShape& s, int64_t n, int m, int g) {
  return ((n * s.depth_stride + m) * s.kv_heads + g) * int64_t(s.head_dim);
}
DB_HD int64_t lse_offset(const ModaShape& s, int64_t n, int h) {
  const int64_t b = n / s.seq_len;
  return (b * s.heads + h) * s.seq_len + n % s.seq_len;
}
template <class A>
DB_HD A softmax_scale(const ModaShape& s) {
  using std::sqrt;
  return A(1.0 / sqrt(double(s.head_dim)));
}

// Forward of row n, query head h: o and lse hold the sequence part's on entry and the joint
// softmax's on return. Only lane 0 writes lse. T: the tensors' type, L: lse's (fp32 beside bf16
// tensors under bf16 activation storage); both computed in A.
template <class A, class T, class L, class Lanes>
DB_HD void forward_row(T* o, L* lse, const T* q, const T* depth_k, const T* depth_v,
                       const ModaShape& s, int64_t n, int h, const Lanes& lanes) {
  using std::exp;
  using std::log;
  if (s.depth == 0) return;
  const int hd = s.head_dim, g = h / (s.heads / s.kv_heads);
  const A scale = softmax_scale<A>(s);
  LaneValues<A, Lanes> query;
  query.load(lanes, q + query_offset(s, n, h), hd, scale);  // scaled once: s_m = query·K^d_m
  // One online softmax over the depth logits, started from the sequence part: weights are
  // relative to exp(mx), so o_seq enters with weight exp(lse_seq − mx) = 1. Each entry's K and V
  // are read once (the pass is bound by reading them).
  A mx = A(lse[lse_offset(s, n, h)]), sum = 1;
  LaneValues<A, Lanes> out;
  T* o_row = o + query_offset(s, n, h);
  out.load(lanes, o_row, hd);
  for (int m = 0; m < s.depth; ++m) {
    const int64_t at = depth_offset(s, n, m, g);
    const A logit = query.dot(lanes, depth_k + at, hd);
    const A new_mx = logit > mx ? logit : mx;
    const A keep = exp(mx - new_mx), p = exp(logit - new_mx);
    sum = sum * keep + p;
    out.scale_add(lanes, keep, p, depth_v + at, hd);
    mx = new_mx;
  }
  out.scale(lanes, A(1) / sum, hd);
  out.store(lanes, o_row, hd);
  const A joint = mx + log(sum);
  if (lanes.leader()) lse[lse_offset(s, n, h)] = L(joint);
}

// Backward of row n, kv head g: the depth part's gradients of every query head of the group, in
// head order (one thread group owns the token's entries of kv head g: no atomics). dq holds the
// sequence part's gradient and is added to; d_depth_k, d_depth_v are added to. o and lse are the
// joint forward's.
template <class A, class T, class L, class Lanes>
DB_HD void backward_row(T* dq, T* d_depth_k, T* d_depth_v, const T* d_o, const T* o, const L* lse,
                        const T* q, const T* depth_k, const T* depth_v, const ModaShape& s,
                        int64_t n, int g, const Lanes& lanes) {
  using std::exp;
  if (s.depth == 0) return;
  const int hd = s.head_dim, group = s.heads / s.kv_heads;
  const A scale = softmax_scale<A>(s);
  for (int h = g * group; h < (g + 1) * group; ++h) {
    const int64_t row = query_offset(s, n, h);
    LaneValues<A, Lanes> query, grad, dquery;
    query.load(lanes, q + row, hd);
    grad.load(lanes, d_o + row, hd);
    dquery.load(lanes, dq + row, hd);
    const A D = grad.dot(lanes, o + row, hd);  // = Σ over all entries of p·dp
    const A row_lse = A(lse[lse_offset(s, n, h)]);
    for (int m = 0; m < s.depth; ++m) {
      const int64_t at = depth_offset(s, n, m, g);
      const A p = exp(scale * query.dot(lanes, depth_k + at, hd) - row_lse);
      const A ds = scale * p * (grad.dot(lanes, depth_v + at, hd) - D);
      dquery.scale_add(lanes, A(1), ds, depth_k + at, hd);
      DB_MODA_UNROLL
      for (int c = 0; c < kValues<Lanes>; ++c) {
        const int e = lanes.first() + Lanes::kCount * c;
        if (e >= hd) break;
        d_depth_k[at + e] = T(A(d_depth_k[at + e]) + ds * query.x[c]);
        d_depth_v[at + e] = T(A(d_depth_v[at + e]) + p * grad.x[c]);
      }
    }
    dquery.store(lanes, dq + row, hd);
  }
}

}  // namespace db::moda_merge
