#include "model/sublayer_cores.hpp"

#include <type_traits>

#include "core/bfloat16.hpp"
#include "model/backbone.hpp"

namespace db {

template <class T, class S>
const S* SublayerCores<T, S>::storage_input(const T* x, Buffer<S>& keep, int64_t count) {
  if constexpr (std::is_same_v<S, T>) {
    return x;
  } else {
    keep.resize(count);
    ops_.narrow(keep.data(), x, count);
    return keep.data();
  }
}

template <class T, class S>
const S* SublayerCores<T, S>::weight(const Backbone<T>& net, int id) const {
  if constexpr (std::is_same_v<S, T>)
    return net.value(id);
  else
    return net.bf16_weight(id);
}

template <class T, class S>
void SublayerCores<T, S>::rope(Backbone<T>& net, S* x, int heads, bool inverse) {
  const ModelConfig& c = net.config();
  ops_.rope(x, net.batch(), net.seq_len(), heads, c.head_dim(), c.rope_theta, inverse);
}

// The fused StorageOps calls, or under train.fused_kernels = off the interface's own
// compositions of the separate calls (a qualified call does not dispatch to the override).
template <class T, class S>
void SublayerCores<T, S>::qk_norm_rope_forward(Backbone<T>& net, S* y, T* rstd, S* y_unrotated,
                                               const S* x, const T* gain, int heads) {
  const ModelConfig& c = net.config();
  const int64_t B = net.batch();
  const int Tn = net.seq_len(), hd = c.head_dim();
  if (net.fused_kernels())
    ops_.qk_norm_rope_forward(y, rstd, y_unrotated, x, gain, B, Tn, heads, hd, c.norm_eps,
                              c.rope_theta);
  else
    ops_.StorageOps<T, S>::qk_norm_rope_forward(y, rstd, y_unrotated, x, gain, B, Tn, heads, hd,
                                                c.norm_eps, c.rope_theta);
}

template <class T, class S>
void SublayerCores<T, S>::qk_norm_rope_backward(Backbone<T>& net, S* dx, T* dgain, S* dy,
                                                const S* dy_unrotated, const S* x, const T* gain,
                                                const T* rstd, int heads) {
  const ModelConfig& c = net.config();
  const int64_t B = net.batch();
  const int Tn = net.seq_len(), hd = c.head_dim();
  if (net.fused_kernels())
    ops_.qk_norm_rope_backward(dx, dgain, dy, dy_unrotated, x, gain, rstd, B, Tn, heads, hd,
                               c.rope_theta);
  else
    ops_.StorageOps<T, S>::qk_norm_rope_backward(dx, dgain, dy, dy_unrotated, x, gain, rstd, B, Tn,
                                                 heads, hd, c.rope_theta);
}

template <class T, class S>
void SublayerCores<T, S>::rope_qk(Backbone<T>& net, S* q, S* k, bool inverse) {
  const ModelConfig& c = net.config();
  const int64_t B = net.batch();
  const int Tn = net.seq_len(), hd = c.head_dim(), H = c.n_head, Hkv = c.kv_heads();
  if (net.fused_kernels())
    ops_.rope_qk(q, H, k, Hkv, B, Tn, hd, c.rope_theta, inverse);
  else
    ops_.StorageOps<T, S>::rope_qk(q, H, k, Hkv, B, Tn, hd, c.rope_theta, inverse);
}

template <class T, class S>
void SublayerCores<T, S>::attention_forward(Backbone<T>& net, int p, const T* x, T* y) {
  const ModelConfig& c = net.config();
  AttentionCache& a = attention_[p];
  attention_project(net, p, x);
  ops_.attention_forward(a.o.data(), a.lse.data(), a.q.data(), a.k.data(), a.v.data(),
                         {net.batch(), net.seq_len(), c.n_head, c.kv_heads(), c.head_dim()});
  attention_output(net, p, y);
}

template <class T, class S>
void SublayerCores<T, S>::attention_backward(Backbone<T>& net, int p, const T* dy, T* dx) {
  const ModelConfig& c = net.config();
  const int64_t N = net.rows();
  const int hd = c.head_dim(), H = c.n_head, Hkv = c.kv_heads();
  AttentionCache& a = attention_[p];
  Buffer<S>& d_o = scratch_a_;
  d_o.resize(N * H * hd);
  attention_output_backward(net, p, dy, d_o.data());
  dq_.resize(N * H * hd);
  dk_.resize(N * Hkv * hd);
  dv_.resize(N * Hkv * hd);
  ops_.attention_backward(dq_.data(), dk_.data(), dv_.data(), d_o.data(), a.o.data(), a.lse.data(),
                          a.q.data(), a.k.data(), a.v.data(),
                          {net.batch(), net.seq_len(), H, Hkv, hd});
  attention_project_backward(net, p, dq_.data(), dk_.data(), dv_.data(), dx);
}

template <class T, class S>
void SublayerCores<T, S>::attention_project(Backbone<T>& net, int p, const T* x, S* k_unrotated) {
  const ModelConfig& c = net.config();
  const int64_t N = net.rows();
  const int d = c.d_model, hd = c.head_dim(), H = c.n_head, Hkv = c.kv_heads();
  AttentionCache& a = attention_[p];
  a.x = storage_input(x, a.x_rounded, N * d);
  a.q.resize(N * H * hd);
  a.k.resize(N * Hkv * hd);
  a.v.resize(N * Hkv * hd);
  a.o.resize(N * H * hd);
  a.lse.resize(N * H);
  // With QK-norm the projections go to q_pre_norm, k_pre_norm (kept for the norm's backward).
  if (c.qk_norm) {
    a.q_pre_norm.resize(N * H * hd);
    a.k_pre_norm.resize(N * Hkv * hd);
  }
  S* q = c.qk_norm ? a.q_pre_norm.data() : a.q.data();
  S* k = c.qk_norm ? a.k_pre_norm.data() : a.k.data();
  ops_.linear_forward(q, a.x, weight(net, net.block_param(p, "wq")), N, d, H * hd);
  ops_.linear_forward(k, a.x, weight(net, net.block_param(p, "wk")), N, d, Hkv * hd);
  ops_.linear_forward(a.v.data(), a.x, weight(net, net.block_param(p, "wv")), N, d, Hkv * hd);
  if (c.qk_norm) {  // RMSNorm over head_dim on q and k before RoPE (Qwen3), in one pass each
    a.q_rstd.resize(N * H);
    a.k_rstd.resize(N * Hkv);
    qk_norm_rope_forward(net, a.q.data(), a.q_rstd.data(), nullptr, a.q_pre_norm.data(),
                         net.value(net.block_param(p, "q_norm")), H);
    qk_norm_rope_forward(net, a.k.data(), a.k_rstd.data(), k_unrotated, a.k_pre_norm.data(),
                         net.value(net.block_param(p, "k_norm")), Hkv);
  } else {
    if (k_unrotated) ops_.copy(k_unrotated, a.k.data(), N * Hkv * hd);
    rope_qk(net, a.q.data(), a.k.data(), false);
  }
}

template <class T, class S>
void SublayerCores<T, S>::attention_output(Backbone<T>& net, int p, T* y) {
  const ModelConfig& c = net.config();
  AttentionCache& a = attention_[p];
  ops_.linear_forward_wide(y, a.o.data(), weight(net, net.block_param(p, "wo")), net.rows(),
                           c.n_head * c.head_dim(), c.d_model);
}

template <class T, class S>
void SublayerCores<T, S>::attention_output_backward(Backbone<T>& net, int p, const T* dy, S* d_o) {
  const ModelConfig& c = net.config();
  const int wo = net.block_param(p, "wo");
  AttentionCache& a = attention_[p];
  ops_.linear_backward(d_o, net.grad(wo), storage_input(dy, dy_, net.rows() * c.d_model),
                       a.o.data(), weight(net, wo), net.rows(), c.n_head * c.head_dim(), c.d_model,
                       false);
}

template <class T, class S>
void SublayerCores<T, S>::attention_project_backward(Backbone<T>& net, int p, S* dq, S* dk,
                                                     const S* dv, T* dx, const S* dk_unrotated) {
  const ModelConfig& c = net.config();
  const int64_t N = net.rows();
  const int d = c.d_model, hd = c.head_dim(), H = c.n_head, Hkv = c.kv_heads();
  AttentionCache& a = attention_[p];
  if (c.qk_norm) {  // the pre-norm gradients go to scratch; dq, dk then point there
    const int qn = net.block_param(p, "q_norm"), kn = net.block_param(p, "k_norm");
    scratch_b_.resize(N * H * hd);
    scratch_c_.resize(N * Hkv * hd);
    qk_norm_rope_backward(net, scratch_b_.data(), net.grad(qn), dq, nullptr, a.q_pre_norm.data(),
                          net.value(qn), a.q_rstd.data(), H);
    qk_norm_rope_backward(net, scratch_c_.data(), net.grad(kn), dk, dk_unrotated,
                          a.k_pre_norm.data(), net.value(kn), a.k_rstd.data(), Hkv);
    dq = scratch_b_.data();
    dk = scratch_c_.data();
  } else {
    rope_qk(net, dq, dk, true);
    if (dk_unrotated) ops_.axpby(dk, T(1), dk_unrotated, T(1), N * Hkv * hd);
  }
  const int wq = net.block_param(p, "wq"), wk = net.block_param(p, "wk"),
            wv = net.block_param(p, "wv");
  ops_.linear_backward_wide(dx, net.grad(wq), dq, a.x, weight(net, wq), N, d, H * hd, false);
  ops_.linear_backward_wide(dx, net.grad(wk), dk, a.x, weight(net, wk), N, d, Hkv * hd, true);
  ops_.linear_backward_wide(dx, net.grad(wv), dv, a.x, weight(net, wv), N, d, Hkv * hd, true);
}

template <class T, class S>
void SublayerCores<T, S>::ffn_forward(Backbone<T>& net, int p, const T* x, T* y) {
  const int64_t N = net.rows();
  const int d = net.d(), ff = net.config().ff_dim();
  FfnCache& f = ffn_[p];
  f.x = storage_input(x, f.x_rounded, N * d);
  f.a.resize(N * ff);
  f.b.resize(N * ff);
  f.h.resize(N * ff);
  ops_.linear_forward(f.a.data(), f.x, weight(net, net.block_param(p, "w1")), N, d, ff);
  ops_.linear_forward(f.b.data(), f.x, weight(net, net.block_param(p, "w3")), N, d, ff);
  ops_.swiglu_forward(f.h.data(), f.a.data(), f.b.data(), N * ff);
  ops_.linear_forward_wide(y, f.h.data(), weight(net, net.block_param(p, "w2")), N, ff, d);
}

template <class T, class S>
void SublayerCores<T, S>::ffn_backward(Backbone<T>& net, int p, const T* dy, T* dx) {
  const int64_t N = net.rows();
  const int d = net.d(), ff = net.config().ff_dim();
  FfnCache& f = ffn_[p];
  scratch_a_.resize(N * ff);
  scratch_b_.resize(N * ff);
  scratch_c_.resize(N * ff);
  S *dh = scratch_a_.data(), *da = scratch_b_.data(), *db = scratch_c_.data();
  const int w1 = net.block_param(p, "w1"), w2 = net.block_param(p, "w2"),
            w3 = net.block_param(p, "w3");
  ops_.linear_backward(dh, net.grad(w2), storage_input(dy, dy_, N * d), f.h.data(), weight(net, w2),
                       N, ff, d, false);
  ops_.swiglu_backward(da, db, dh, f.a.data(), f.b.data(), N * ff);
  ops_.linear_backward_wide(dx, net.grad(w1), da, f.x, weight(net, w1), N, d, ff, false);
  ops_.linear_backward_wide(dx, net.grad(w3), db, f.x, weight(net, w3), N, d, ff, true);
}

template <class T, class S>
void SublayerCores<T, S>::release(int p) {
  attention_[p] = {};
  ffn_[p] = {};
}

template class SublayerCores<float, float>;
template class SublayerCores<double, double>;
template class SublayerCores<float, bfloat16>;

}  // namespace db
