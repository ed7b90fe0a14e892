// The AttnRes depth softmax (§9, §10), per token: h = Σ_i softmax_i(q·RMSNorm(v_i; g))·v_i over
// the m sources v_i, and its backward. DB_HD functors launched through ops/launch.hpp (one row
// each, shared by a warp on a GPU), so the CPU loop and the CUDA kernel run the same body. Each
// direction has two forms: two passes over the sources (Forward, Backward) and, under
// train.fused_kernels, one read of each source (OnePassForward, an online softmax;
// doc/performance.md, "AttnRes depth softmax in one read") and a backward in two halves that
// writes each source's gradient once (ConsumerBackward, then GatherBackward per source;
// "AttnRes backward by gathering").
// Accumulators are double whatever T, and the query and key-gain gradients are summed over rows in
// fixed chunks (for_each_row_sum): the same bits on any thread count. The sources are read as
// StateValues (state_values.hpp): T, or bf16 under train.state_dtype = bf16, widened on load; so
// are the mixes' output gradients dh.
#pragma once
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/device_unroll.hpp"
#include "core/host_device.hpp"
#include "model/residual/state_values.hpp"
#include "ops/launch.hpp"

namespace db {

struct DepthMixShape {
  int64_t rows;
  int d;
  int sources;  // m
  double eps;
};

// The source pointers (16 bytes each: a T and a bf16 one) travel by value in the functor (a
// kernel parameter on the GPU: at 256 sources 4 KiB forward, 6 KiB backward with its two
// lists; CUDA ≥ 12.1, which CMake requires, takes 32 KiB), so a consumer mixes at most this many
// sources: Full AttnRes with up to 127 blocks. The functors are compiled for 16, 64 or 256
// sources and the smallest that holds m runs: the two-pass functors' per-source arrays live in
// each GPU thread's local memory, which the device reserves for every thread it can hold (4 KiB
// per thread for 256 sources: ≈ 1.1 GiB on an H200); the one-pass functors keep 8 scalars a
// thread at most, in registers. A source's list of consumers
// (GatherBackward: the embedding's is 2L + 1 long) has the same capacities: 56 bytes an entry,
// 14 KiB of kernel parameters at 256 (CUDA ≥ 12.1 takes 32 KiB).
constexpr int kMaxDepthSources = 256;

// A source's gradient from all its consumers c at once (GatherBackward): per token
//   dv = Σ_c [w_c·dh_c + rs·dlogit_c·(q_c ⊙ g_c)] − (rs³/d)·(Σ_c dlogit_c·(q_c ⊙ g_c)·v)·v,
// the weighted sum's share and the key norm's (logit_c = q_c·(g_c ⊙ v)·rs, rs = rstd(v) of
// the source alone, the same for every consumer).
template <class T>
struct DepthGatherTerm {
  StateValues<T> dh;  // the consumer's ∂/∂h [rows, d]
  // Its softmax weight of this source (the forward's weights) and the logit's gradient
  // (ConsumerBackward's dlogits), at [r·stride]; weight null: h is the source itself (weight 1,
  // no key), as the embedding for sublayer 0.
  const T *weight, *dlogit;
  const T *query, *key_gain;
  int stride;
};

// The widest row the one-pass functors take: a lane keeps its columns of the current source
// (and the forward those of its running numerator) in registers on a GPU, D / 32 values each —
// 64 floats at the 1.6B shape's d = 2048, 32 doubles at d = 1024 (the same registers). Wider
// rows take the two passes.
template <class T>
inline constexpr int kMaxOnePassWidth = sizeof(T) > sizeof(float) ? 1024 : 2048;

namespace depth_softmax_kernels {

// The key statistic 1/sqrt(mean(v²) + eps) from Σ v².
template <class T>
DB_HD T key_rstd(double sum_squares, int d, double eps) {
  using std::sqrt;
  return T(1.0 / sqrt(sum_squares / d + eps));
}

// One term of the logit q·K_i: the key value is rounded to T as a materialised RMSNorm output
// would be.
template <class T>
DB_HD double logit_term(T query, T key_gain, T value, T rstd) {
  return double(query) * T(key_gain * value * rstd);
}

// logit[i] ← exp(logit[i] − max) over the m sources; returns their sum.
DB_HD double exp_in_place(double* logit, int m) {
  using std::exp;
  double mx = logit[0];
  for (int i = 1; i < m; ++i) mx = logit[i] > mx ? logit[i] : mx;
  double total = 0;
  for (int i = 0; i < m; ++i) total += (logit[i] = exp(logit[i] - mx));
  return total;
}

// One row r, its d columns shared by `lanes` (ops/launch.hpp: one lane on the host, a warp on a
// GPU). Per column the sources are visited in order; dot products are lane partials added by
// lanes.sum (on the host: the plain serial sums).
template <class T, int M>
struct Forward {
  T *h, *weights, *rstd;
  PointerList<StateValues<T>, M> sources;
  const T *query, *key_gain;
  int d, m;
  double eps;
  template <class Lanes>
  DB_HD void operator()(int64_t r, const Lanes& lanes) const {
    double logit[M];
    for (int i = 0; i < m; ++i) {
      const StateValues<T> v = sources[i] + r * d;
      double sum_squares = 0, dot = 0;
      for (int j = lanes.first(); j < d; j += lanes.step()) sum_squares += double(v[j]) * v[j];
      const T rs = key_rstd<T>(lanes.sum(sum_squares), d, eps);
      if (lanes.leader()) rstd[r * m + i] = rs;
      for (int j = lanes.first(); j < d; j += lanes.step())
        dot += logit_term(query[j], key_gain[j], v[j], rs);
      logit[i] = lanes.sum(dot);
    }
    const double total = exp_in_place(logit, m);
    T* hr = h + r * d;
    for (int j = lanes.first(); j < d; j += lanes.step()) hr[j] = T(0);
    for (int i = 0; i < m; ++i) {
      const T w = T(logit[i] / total);
      if (lanes.leader()) weights[r * m + i] = w;
      const StateValues<T> v = sources[i] + r * d;
      for (int j = lanes.first(); j < d; j += lanes.step()) hr[j] += w * v[j];
    }
  }
};

// How many of `count` values (columns, sources) fall to this lane: first, first + step, ….
template <class Lanes>
DB_HD int lane_share(int count, const Lanes& lanes) {
  return (count - lanes.first() + lanes.step() - 1) / lanes.step();
}

// logit[k] ← l when this lane keeps source i (= first + k·step). On a GPU through constant
// indices, so that the array stays in registers.
template <int N, class Lanes>
DB_HD void keep_logit(double (&logit)[N], int i, double l, const Lanes& lanes) {
  if (i % lanes.step() != lanes.first()) return;
  const int k = i / lanes.step();
#if DB_DEVICE_LOOPS
  DB_DEVICE_UNROLL
  for (int s = 0; s < N; ++s)
    if (s == k) logit[s] = l;
#else
  logit[k] = l;
#endif
}

// Forward in one read of each source (an online softmax, as flash attention's over keys), for
// rows of d ≤ D columns: a lane loads its columns of v_i once, the two lane sums give rstd_i and
// the logit l_i, and the running numerator Σ e_i·v_i and total Σ e_i take v_i in, with
// e_i = exp(l_i − the largest logit so far) (both rescaled when that grows); at the end
// h = numerator / total and the weights exp(l_i − max) / total, from the logits kept as
// scalars, spread over the lanes (source i with lane i mod step). rstd and the logits are
// Forward's sums in Forward's order; h and the weights differ from Forward's by rounding only
// (h is summed in T, as Forward's, but of unnormalised terms, rescaled on the way).
template <class T, int M, int D>
struct OnePassForward {
  T *h, *weights, *rstd;
  PointerList<StateValues<T>, M> sources;
  const T *query, *key_gain;
  int d, m;
  double eps;
  template <class Lanes>
  DB_HD void operator()(int64_t r, const Lanes& lanes) const {
    using std::exp;
    constexpr int kColumns = D / Lanes::kCount;  // this lane's: j = first + c·step
    constexpr int kLogits = (M + Lanes::kCount - 1) / Lanes::kCount;
    const int columns = lane_share(d, lanes);
    T value[kColumns], numerator[kColumns];
    double logit[kLogits];
    DB_DEVICE_UNROLL
    for (int c = 0; c < register_loop_bound<kColumns>(columns); ++c) numerator[c] = T(0);
    double max_logit = 0, total = 0;
    for (int i = 0; i < m; ++i) {
      const StateValues<T> v = sources[i] + r * d;
      double sum_squares = 0, dot = 0;
      DB_DEVICE_UNROLL
      for (int c = 0; c < register_loop_bound<kColumns>(columns); ++c) {
        if (c >= columns) break;
        const int j = lanes.first() + c * lanes.step();
        value[c] = v[j];
        sum_squares += double(value[c]) * value[c];
      }
      const T rs = key_rstd<T>(lanes.sum(sum_squares), d, eps);
      if (lanes.leader()) rstd[r * m + i] = rs;
      DB_DEVICE_UNROLL
      for (int c = 0; c < register_loop_bound<kColumns>(columns); ++c) {
        if (c >= columns) break;
        const int j = lanes.first() + c * lanes.step();
        dot += logit_term(query[j], key_gain[j], value[c], rs);
      }
      const double l = lanes.sum(dot);
      keep_logit(logit, i, l, lanes);
      if (i == 0) {
        max_logit = l;
      } else if (l > max_logit) {
        const double rescale = exp(max_logit - l);
        total *= rescale;
        DB_DEVICE_UNROLL
        for (int c = 0; c < register_loop_bound<kColumns>(columns); ++c) numerator[c] *= T(rescale);
        max_logit = l;
      }
      const double e = exp(l - max_logit);
      total += e;
      DB_DEVICE_UNROLL
      for (int c = 0; c < register_loop_bound<kColumns>(columns); ++c) {
        if (c >= columns) break;
        numerator[c] += T(e) * value[c];
      }
    }
    T* hr = h + r * d;
    DB_DEVICE_UNROLL
    for (int c = 0; c < register_loop_bound<kColumns>(columns); ++c) {
      if (c >= columns) break;
      hr[lanes.first() + c * lanes.step()] = T(numerator[c] / total);
    }
    const int logits = lane_share(m, lanes);
    DB_DEVICE_UNROLL
    for (int k = 0; k < register_loop_bound<kLogits>(logits); ++k) {
      if (k >= logits) break;
      weights[r * m + lanes.first() + k * lanes.step()] = T(exp(logit[k] - max_logit) / total);
    }
  }
};

// Row r's source gradients (added), and its query and key-gain contributions into
// sums[0, d) and sums[d, 2d) (each lane into its own columns).
template <class T, int M>
struct Backward {
  PointerList<T*, M> dsources;
  PointerList<StateValues<T>, M> sources;
  StateValues<T> dh;
  const T *weights, *rstd, *query, *key_gain;
  int d, m;
  template <class Lanes>
  DB_HD void operator()(int64_t r, double* sums, const Lanes& lanes) const {
    double dw[M], dlogit[M];
    double* dq = sums;
    double* dg = sums + d;
    const StateValues<T> dhr = dh + r * d;
    const T* w = weights + r * m;
    double mean_dw = 0;  // Σ_k w_k·dw_k, in source order
    for (int i = 0; i < m; ++i) {
      const StateValues<T> v = sources[i] + r * d;
      double dot = 0;
      for (int j = lanes.first(); j < d; j += lanes.step()) dot += double(dhr[j]) * v[j];
      dw[i] = lanes.sum(dot);
      mean_dw += double(w[i]) * dw[i];
    }
    for (int i = 0; i < m; ++i) dlogit[i] = double(w[i]) * (dw[i] - mean_dw);
    for (int i = 0; i < m; ++i) {
      const StateValues<T> v = sources[i] + r * d;
      T* dv = dsources[i] + r * d;
      const double rs = rstd[r * m + i];
      // logit = Σ_j q_j g_j v_j rs; dK_j = dlogit·q_j; the RMSNorm backward with gain g.
      double dot = 0;  // Σ_j dK_j g_j v_j
      for (int j = lanes.first(); j < d; j += lanes.step()) {
        const double key_hat = double(v[j]) * rs;
        dq[j] += dlogit[i] * key_gain[j] * key_hat;
        dg[j] += dlogit[i] * query[j] * key_hat;
        dot += dlogit[i] * query[j] * key_gain[j] * v[j];
      }
      const double coef = rs * rs * rs * lanes.sum(dot) / d;
      // Through the weighted sum (w·dh) and through the key norm.
      for (int j = lanes.first(); j < d; j += lanes.step())
        dv[j] += T(double(w[i]) * dhr[j] + rs * dlogit[i] * query[j] * key_gain[j] - coef * v[j]);
    }
  }
};

// The consumer's half of the gathered backward (train.fused_kernels), for rows of d ≤ D
// columns. As Σ_k w_k·dw_k = dh·Σ_k w_k·v_k = dh·h, the forward's output h gives each source's
// dlogit_i = w_i·(dh·v_i − dh·h) as soon as v_i is read: a lane loads its columns of v_i once
// and they serve dw_i and the query and key-gain terms. The source gradients are not written
// here: each source collects its consumers' shares once, in GatherBackward, from w_i (the
// forward's weights) and dlogit_i, kept in dlogits [rows, m]. A source with a gradient pointer
// (Block AttnRes's partial sum, which has this one consumer) gets its share added here instead, as
// the two-pass Backward adds it. Backward's sums otherwise, in its order; the results differ from
// Backward's by rounding (dh·h is summed from h rounded to T instead of from the dw_k).
template <class T, int M, int D>
struct ConsumerBackward {
  PointerList<T*, M> dsources;  // null: the source's share is gathered later
  PointerList<StateValues<T>, M> sources;
  T* dlogits;
  StateValues<T> dh;
  const T *h, *weights, *rstd, *query, *key_gain;
  int d, m;
  template <class Lanes>
  DB_HD void operator()(int64_t r, double* sums, const Lanes& lanes) const {
    constexpr int kColumns = D / Lanes::kCount;  // this lane's: j = first + c·step
    const int columns = lane_share(d, lanes);
    T value[kColumns];
    double* dq = sums;
    double* dg = sums + d;
    const StateValues<T> dhr = dh + r * d;
    const T* hr = h + r * d;
    double part = 0;
    for (int j = lanes.first(); j < d; j += lanes.step()) part += double(dhr[j]) * hr[j];
    const double mean_dw = lanes.sum(part);
    for (int i = 0; i < m; ++i) {
      const StateValues<T> v = sources[i] + r * d;
      const double w = weights[r * m + i], rs = rstd[r * m + i];
      double dw = 0;
      DB_DEVICE_UNROLL
      for (int c = 0; c < register_loop_bound<kColumns>(columns); ++c) {
        if (c >= columns) break;
        const int j = lanes.first() + c * lanes.step();
        value[c] = v[j];
        dw += double(dhr[j]) * value[c];
      }
      const double dlogit = w * (lanes.sum(dw) - mean_dw);
      if (lanes.leader()) dlogits[r * m + i] = T(dlogit);
      // Σ_j dK_j g_j v_j, as Backward, only for a share added here (on the host a serial sum,
      // the slow part of the loop).
      const bool adds = dsources[i] != nullptr;
      double dot = 0;
      DB_DEVICE_UNROLL
      for (int c = 0; c < register_loop_bound<kColumns>(columns); ++c) {
        if (c >= columns) break;
        const int j = lanes.first() + c * lanes.step();
        const double key_hat = double(value[c]) * rs;
        dq[j] += dlogit * key_gain[j] * key_hat;
        dg[j] += dlogit * query[j] * key_hat;
        if (adds) dot += dlogit * query[j] * key_gain[j] * value[c];
      }
      if (!adds) continue;
      T* dv = dsources[i] + r * d;
      const double coef = rs * rs * rs * lanes.sum(dot) / d;
      DB_DEVICE_UNROLL
      for (int c = 0; c < register_loop_bound<kColumns>(columns); ++c) {
        if (c >= columns) break;
        const int j = lanes.first() + c * lanes.step();
        dv[j] += T(w * dhr[j] + rs * dlogit * query[j] * key_gain[j] - coef * value[c]);
      }
    }
  }
};

// dv (written) for one source v from its n consumers, in list order, for rows of d ≤ D columns:
// a lane keeps its columns of v and of the gradient in registers, reads each consumer's row of
// dh once and writes dv once. rs is recomputed from v as the forward computed it.
template <class T, int N, int D>
struct GatherBackward {
  T* dv;
  StateValues<T> v;
  PointerList<DepthGatherTerm<T>, N> consumers;
  int d, n;
  double eps;
  template <class Lanes>
  DB_HD void operator()(int64_t r, const Lanes& lanes) const {
    constexpr int kColumns = D / Lanes::kCount;  // this lane's: j = first + c·step
    const int columns = lane_share(d, lanes);
    T value[kColumns], grad[kColumns];
    const StateValues<T> vr = v + r * d;
    double sum_squares = 0;
    DB_DEVICE_UNROLL
    for (int c = 0; c < register_loop_bound<kColumns>(columns); ++c) {
      grad[c] = T(0);
      if (c >= columns) break;
      value[c] = vr[lanes.first() + c * lanes.step()];
      sum_squares += double(value[c]) * value[c];
    }
    const double rs = key_rstd<T>(lanes.sum(sum_squares), d, eps);
    double key = 0;  // Σ_c dlogit_c·Σ_j q_j g_j v_j over this lane's columns
    for (int k = 0; k < n; ++k) {
      const DepthGatherTerm<T> t = consumers[k];
      const StateValues<T> dhr = t.dh + r * d;
      if (t.weight == nullptr) {
        DB_DEVICE_UNROLL
        for (int c = 0; c < register_loop_bound<kColumns>(columns); ++c) {
          if (c >= columns) break;
          grad[c] += dhr[lanes.first() + c * lanes.step()];
        }
        continue;
      }
      const double w = t.weight[r * t.stride], dlogit = t.dlogit[r * t.stride];
      double dot = 0;
      DB_DEVICE_UNROLL
      for (int c = 0; c < register_loop_bound<kColumns>(columns); ++c) {
        if (c >= columns) break;
        const int j = lanes.first() + c * lanes.step();
        const double qg = double(t.query[j]) * t.key_gain[j];
        grad[c] += T(w * dhr[j] + rs * dlogit * qg);
        dot += qg * value[c];
      }
      key += dlogit * dot;
    }
    const double coef = rs * rs * rs * lanes.sum(key) / d;
    T* dvr = dv + r * d;
    DB_DEVICE_UNROLL
    for (int c = 0; c < register_loop_bound<kColumns>(columns); ++c) {
      if (c >= columns) break;
      dvr[lanes.first() + c * lanes.step()] = T(grad[c] - coef * value[c]);
    }
  }
};

// Calls run(std::integral_constant<int, M>) for the smallest capacity M of 16, 64, 256 that
// holds m entries of a list: a consumer's sources, a source's consumers (GatherBackward).
template <class Run>
void with_list_capacity(int m, const char* what, const Run& run) {
  DB_REQUIRE(
      m >= 1 && m <= kMaxDepthSources,
      std::to_string(m) + " " + what + " exceed the capacity " + std::to_string(kMaxDepthSources));
  if (m <= 16)
    run(std::integral_constant<int, 16>{});
  else if (m <= 64)
    run(std::integral_constant<int, 64>{});
  else
    run(std::integral_constant<int, kMaxDepthSources>{});
}

// Calls run(std::integral_constant<int, D>) for the smallest row capacity D of 1024 and
// kMaxOnePassWidth<T> that holds d columns (on the host, one lane's arrays of D values on its
// stack); false, running nothing, when d is wider.
template <class T, class Run>
bool with_width_capacity(int d, const Run& run) {
  if (d <= 1024)
    run(std::integral_constant<int, 1024>{});
  else if (d <= kMaxOnePassWidth<T>)
    run(std::integral_constant<int, kMaxOnePassWidth<T>>{});
  else
    return false;
  return true;
}

}  // namespace depth_softmax_kernels

// h [rows, d] = the mix of `sources` ([rows, d] each); weights, rstd [rows, sources] kept.
// one_pass (train.fused_kernels): OnePassForward where the row fits its registers, else Forward.
template <class T>
void depth_softmax_forward(MemorySpace space, bool one_pass, T* h, T* weights, T* rstd,
                           const std::vector<StateValues<T>>& sources, const T* query,
                           const T* key_gain, const DepthMixShape& s) {
  using namespace depth_softmax_kernels;
  DB_REQUIRE(s.sources >= 1 && s.sources == int(sources.size()),
             "depth_softmax_forward: sources do not match the shape");
  with_list_capacity(s.sources, "depth sources", [&](auto capacity) {
    constexpr int M = decltype(capacity)::value;
    const PointerList<StateValues<T>, M> list(sources);
    const bool ran_one_pass =
        one_pass && with_width_capacity<T>(s.d, [&](auto width) {
          constexpr int D = decltype(width)::value;
          for_each_row_lanes(space, s.rows,
                             OnePassForward<T, M, D>{h, weights, rstd, list, query, key_gain, s.d,
                                                     s.sources, s.eps});
        });
    if (!ran_one_pass)
      for_each_row_lanes(
          space, s.rows,
          Forward<T, M>{h, weights, rstd, list, query, key_gain, s.d, s.sources, s.eps});
  });
}

// dsources added; dquery, dkey_gain added (row sums in a fixed order): the two passes, each
// source's gradient added by every consumer in turn (train.fused_kernels off, or rows too wide
// for the gathered form).
template <class T>
void depth_softmax_backward(MemorySpace space, const std::vector<T*>& dsources, T* dquery,
                            T* dkey_gain, StateValues<T> dh,
                            const std::vector<StateValues<T>>& sources, const T* weights,
                            const T* rstd, const T* query, const T* key_gain,
                            const DepthMixShape& s) {
  using namespace depth_softmax_kernels;
  SumTargets<T> targets;
  targets.add(dquery, s.d).add(dkey_gain, s.d);
  with_list_capacity(s.sources, "depth sources", [&](auto capacity) {
    constexpr int M = decltype(capacity)::value;
    for_each_row_sum_lanes(
        space, s.rows, targets,
        Backward<T, M>{PointerList<T*, M>(dsources), PointerList<StateValues<T>, M>(sources), dh,
                       weights, rstd, query, key_gain, s.d, s.sources});
  });
}

// Whether rows of d columns take the gathered backward (train.fused_kernels): a lane's columns
// of a row fit its registers.
template <class T>
bool depth_softmax_gathers(int d) {
  return d <= kMaxOnePassWidth<T>;
}

// The gathered backward, consumer side (ConsumerBackward): dquery, dkey_gain added; dlogits
// [rows, sources] written for depth_softmax_gather (with the forward's weights); the gradients of
// the sources with a non-null dsources entry added (the others are gathered later). Reads h, the
// forward's output.
template <class T>
void depth_softmax_consumer_backward(MemorySpace space, const std::vector<T*>& dsources, T* dlogits,
                                     T* dquery, T* dkey_gain, StateValues<T> dh, const T* h,
                                     const std::vector<StateValues<T>>& sources, const T* weights,
                                     const T* rstd, const T* query, const T* key_gain,
                                     const DepthMixShape& s) {
  using namespace depth_softmax_kernels;
  DB_REQUIRE(depth_softmax_gathers<T>(s.d), "depth_softmax_consumer_backward: rows too wide");
  SumTargets<T> targets;
  targets.add(dquery, s.d).add(dkey_gain, s.d);
  with_list_capacity(s.sources, "depth sources", [&](auto capacity) {
    constexpr int M = decltype(capacity)::value;
    const PointerList<T*, M> grads(dsources);
    const PointerList<StateValues<T>, M> values(sources);
    with_width_capacity<T>(s.d, [&](auto width) {
      constexpr int D = decltype(width)::value;
      for_each_row_sum_lanes(space, s.rows, targets,
                             ConsumerBackward<T, M, D>{grads, values, dlogits, dh, h, weights, rstd,
                                                       query, key_gain, s.d, s.sources});
    });
  });
}

// The gathered backward, source side: dv [rows, d] (written) of the source v from its
// consumers' weights and dlogits (GatherBackward); eps is the forward's.
template <class T>
void depth_softmax_gather(MemorySpace space, T* dv, StateValues<T> v,
                          const std::vector<DepthGatherTerm<T>>& consumers, int64_t rows, int d,
                          double eps) {
  using namespace depth_softmax_kernels;
  DB_REQUIRE(depth_softmax_gathers<T>(d), "depth_softmax_gather: rows too wide");
  with_list_capacity(int(consumers.size()), "consumers of a depth source", [&](auto capacity) {
    constexpr int N = decltype(capacity)::value;
    const PointerList<DepthGatherTerm<T>, N> list(consumers);
    with_width_capacity<T>(d, [&](auto width) {
      constexpr int D = decltype(width)::value;
      for_each_row_lanes(space, rows,
                         GatherBackward<T, N, D>{dv, v, list, d, int(consumers.size()), eps});
    });
  });
}

}  // namespace db
