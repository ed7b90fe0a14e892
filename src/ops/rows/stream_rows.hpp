// Per-token math of the multi-stream designs, HC (§7) and mHC (§8), shared by the CPU loops
// (ops/cpu/cpu_ops.cpp) and the CUDA kernels (ops/cuda/stream_kernels.cu). Each function
// computes one output value (or one token's few coefficients) from pointers to that token's
// data; the backends only decide which thread computes which value. Sums run in a fixed order
// (streams ascending) so the CPU result does not depend on the thread count.
// Layouts: H [n, d] per token (stream-major); weights and maps as in ops/ops.hpp.
#pragma once
#include <cmath>

#include "core/host_device.hpp"
#include "ops/ops.hpp"

namespace db::rows {

// scale·Σ_s state[s, e]: value e of the plain stream sum of one token (the readout).
template <class T>
DB_HD T sum_streams_at(const T* state, T scale, int n, int d, int e) {
  T sum = T(0);
  for (int s = 0; s < n; ++s) sum += state[s * d + e];
  return scale == T(1) ? sum : T(sum * scale);
}

// Σ_s w[s·stride]·H[s, e]: value e of the weighted stream sum of one token.
template <class T>
DB_HD T combine_streams_at(const T* H, const T* w, int stride, int n, int d, int e) {
  T x = T(0);
  for (int s = 0; s < n; ++s) x += w[s * stride] * H[s * d + e];
  return x;
}

// M(i, j) of one token whose map coefficients start at `mix`.
template <class T>
DB_HD T stream_map_at(const T* mix, StreamMapLayout map, int i, int j) {
  return mix[i * map.out + j * map.in + map.offset];
}

// post_i·y[e] + Σ_j M(i, j)·H[j, e]: value e of output stream i of one token.
template <class T>
DB_HD T mix_streams_at(const T* H, const T* y, const T* post, const T* mix, StreamMapLayout map,
                       int n, int d, int i, int e) {
  T out = post[i] * y[e];
  for (int j = 0; j < n; ++j) out += stream_map_at(mix, map, i, j) * H[j * d + e];
  return out;
}

// Σ_i M(i, j)·g[i, e]: value e of the gradient of input stream j of one token.
template <class T>
DB_HD T mix_streams_input_grad_at(const T* g, const T* mix, StreamMapLayout map, int n, int d,
                                  int j, int e) {
  T dh = T(0);
  for (int i = 0; i < n; ++i) dh += stream_map_at(mix, map, i, j) * g[i * d + e];
  return dh;
}

// Σ_i post_i·g[i, e]: value e of the gradient of the branch output y of one token.
template <class T>
DB_HD T mix_streams_branch_grad_at(const T* g, const T* post, int n, int d, int e) {
  T dy = T(0);
  for (int i = 0; i < n; ++i) dy += post[i] * g[i * d + e];
  return dy;
}

// --- HC (§7): α = static + s·tanh(z), β likewise; t holds tanh(z) ----------------------------
template <class T>
DB_HD T hc_coefficient(T static_value, T scale, T t) {
  return static_value + scale * t;
}
// ∂/∂z of the coefficient, given its gradient and t = tanh(z).
template <class T>
DB_HD T hc_coefficient_preactivation_grad(T dcoefficient, T scale, T t) {
  return dcoefficient * scale * (T(1) - t * t);
}

// --- mHC (§8): one token's coefficients from z [n² + 2n] ------------------------------------
template <class T>
DB_HD T sigmoid(T x) {
  using std::exp;  // expf for float on the host, as the device's exp overload
  return T(1) / (T(1) + exp(-x));
}

// pre [n], post [n], res_logits [n²] of one token.
template <class T>
DB_HD void mhc_coefficients_row(T* pre, T* post, T* res_logits, const T* z, const T* gates,
                                const T* bias, int n) {
  for (int s = 0; s < n; ++s) {
    pre[s] = sigmoid(T(gates[0] * z[s] + bias[s]));
    post[s] = T(2) * sigmoid(T(gates[1] * z[n + s] + bias[n + s]));
  }
  for (int e = 0; e < n * n; ++e) res_logits[e] = gates[2] * z[2 * n + e] + bias[2 * n + e];
}

// The gradients of one token's coefficient logits l (pre, post, res order, n² + 2n values):
// dl[c] = ∂loss/∂l_c; dz = gate·dl is the caller's. σ' = σ(1−σ); (2σ)' = 2σ(1−σ) = q(1 − q/2).
template <class T>
DB_HD void mhc_logit_grads_row(T* dl, const T* dpre, const T* dpost, const T* dres_logits,
                               const T* pre, const T* post, int n) {
  for (int s = 0; s < n; ++s) {
    dl[s] = dpre[s] * pre[s] * (T(1) - pre[s]);
    dl[n + s] = dpost[s] * post[s] * (T(1) - post[s] / T(2));
  }
  for (int e = 0; e < n * n; ++e) dl[2 * n + e] = dres_logits[e];
}

// Which gate scales coefficient logit c of a token (pre: 0, post: 1, res: 2).
DB_HD int mhc_gate_of(int c, int n) {
  return c < n ? 0 : c < 2 * n ? 1 : 2;
}

}  // namespace db::rows
