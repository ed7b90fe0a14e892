#include "model/backbone.hpp"

#include <algorithm>
#include <numeric>

#include "core/error.hpp"

namespace db {
namespace {
std::string block_name(int b, const std::string& suffix) {
  return "blocks." + std::to_string(b) + "." + suffix;
}
}  // namespace

template <class T>
void Backbone<T>::declare(ParameterLayout& layout, const ModelConfig& c) {
  const int64_t d = c.d_model, V = c.vocab_size, hd = c.head_dim();
  const int64_t q_width = c.n_head * hd, kv_width = c.kv_heads() * hd, ff = c.ff_dim();
  const double std = c.init_std;
  layout.add_matrix("embed", {V, d}, std);
  for (int b = 0; b < c.n_layer; ++b) {
    layout.add_matrix(block_name(b, "wq"), {q_width, d}, std);
    layout.add_matrix(block_name(b, "wk"), {kv_width, d}, std);
    layout.add_matrix(block_name(b, "wv"), {kv_width, d}, std);
    layout.add_matrix(block_name(b, "wo"), {d, q_width}, std);
    layout.add_matrix(block_name(b, "w1"), {ff, d}, std);
    layout.add_matrix(block_name(b, "w3"), {ff, d}, std);
    layout.add_matrix(block_name(b, "w2"), {d, ff}, std);
    if (c.qk_norm) {
      layout.add_constant(block_name(b, "q_norm"), {hd}, 1.0);
      layout.add_constant(block_name(b, "k_norm"), {hd}, 1.0);
    }
  }
  layout.add_constant("final_norm", {d}, 1.0);
  if (!c.tie_embeddings) layout.add_matrix("lm_head", {V, d}, std);
}

template <class T>
Backbone<T>::Backbone(const ModelConfig& config, const ParameterLayout& layout,
                      ParameterStore<T>& params, Ops<T>& ops)
    : config_(config), layout_(layout), params_(params), ops_(ops), schedule_(config.n_layer) {
  reset_schedule();
  attention_.resize(config.n_layer);
  ffn_.resize(config.n_layer);
}

template <class T>
void Backbone<T>::reset_schedule() {
  std::iota(schedule_.begin(), schedule_.end(), 0);
}

template <class T>
void Backbone<T>::set_batch(int64_t batch, int seq_len) {
  batch_ = batch;
  seq_len_ = seq_len;
}

template <class T>
int Backbone<T>::block_param(int p, const std::string& suffix) const {
  DB_REQUIRE(!skipped(p), "block at position " + std::to_string(p) + " is skipped");
  return layout_.id(block_name(schedule_[p], suffix));
}

template <class T>
void Backbone<T>::attention_forward(int p, const T* x, T* y) {
  const ModelConfig& c = config_;
  AttentionCache& a = attention_[p];
  attention_project(p, x);
  ops_.attention_forward(a.o.data(), a.lse.data(), a.q.data(), a.k.data(), a.v.data(),
                         {batch_, seq_len_, c.n_head, c.kv_heads(), c.head_dim()});
  attention_output(p, y);
}

template <class T>
void Backbone<T>::attention_backward(int p, const T* dy, T* dx) {
  const ModelConfig& c = config_;
  const int64_t N = rows();
  const int hd = c.head_dim(), H = c.n_head, Hkv = c.kv_heads();
  AttentionCache& a = attention_[p];
  Buffer<T>& d_o = scratch_a_;
  d_o.resize(N * H * hd);
  attention_output_backward(p, dy, d_o.data());
  dq_.resize(N * H * hd);
  dk_.resize(N * Hkv * hd);
  dv_.resize(N * Hkv * hd);
  ops_.attention_backward(dq_.data(), dk_.data(), dv_.data(), d_o.data(), a.o.data(), a.lse.data(),
                          a.q.data(), a.k.data(), a.v.data(), {batch_, seq_len_, H, Hkv, hd});
  attention_project_backward(p, dq_.data(), dk_.data(), dv_.data(), dx);
}

template <class T>
void Backbone<T>::attention_project(int p, const T* x, T* k_unrotated) {
  const ModelConfig& c = config_;
  const int64_t N = rows();
  const int d = c.d_model, hd = c.head_dim(), H = c.n_head, Hkv = c.kv_heads();
  AttentionCache& a = attention_[p];
  a.x = x;
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
  T* q = c.qk_norm ? a.q_pre_norm.data() : a.q.data();
  T* k = c.qk_norm ? a.k_pre_norm.data() : a.k.data();
  ops_.linear_forward(q, x, value(block_param(p, "wq")), N, d, H * hd);
  ops_.linear_forward(k, x, value(block_param(p, "wk")), N, d, Hkv * hd);
  ops_.linear_forward(a.v.data(), x, value(block_param(p, "wv")), N, d, Hkv * hd);
  if (c.qk_norm) {  // RMSNorm over head_dim on q and k before RoPE (Qwen3)
    a.q_rstd.resize(N * H);
    a.k_rstd.resize(N * Hkv);
    ops_.rmsnorm_forward(a.q.data(), a.q_rstd.data(), a.q_pre_norm.data(),
                         value(block_param(p, "q_norm")), N * H, hd, c.norm_eps);
    ops_.rmsnorm_forward(a.k.data(), a.k_rstd.data(), a.k_pre_norm.data(),
                         value(block_param(p, "k_norm")), N * Hkv, hd, c.norm_eps);
  }
  if (k_unrotated) ops_.copy(k_unrotated, a.k.data(), N * Hkv * hd);
  rope(a.q.data(), H, false);
  rope(a.k.data(), Hkv, false);
}

template <class T>
void Backbone<T>::attention_output(int p, T* y) {
  const ModelConfig& c = config_;
  ops_.linear_forward(y, attention_[p].o.data(), value(block_param(p, "wo")), rows(),
                      c.n_head * c.head_dim(), c.d_model);
}

template <class T>
void Backbone<T>::attention_output_backward(int p, const T* dy, T* d_o) {
  const ModelConfig& c = config_;
  const int wo = block_param(p, "wo");
  ops_.linear_backward(d_o, grad(wo), dy, attention_[p].o.data(), value(wo), rows(),
                       c.n_head * c.head_dim(), c.d_model, false);
}

template <class T>
void Backbone<T>::attention_project_backward(int p, T* dq, T* dk, const T* dv, T* dx,
                                             const T* dk_unrotated) {
  const ModelConfig& c = config_;
  const int64_t N = rows();
  const int d = c.d_model, hd = c.head_dim(), H = c.n_head, Hkv = c.kv_heads();
  AttentionCache& a = attention_[p];
  rope(dq, H, true);
  rope(dk, Hkv, true);
  if (dk_unrotated) ops_.axpby(dk, T(1), dk_unrotated, T(1), N * Hkv * hd);
  if (c.qk_norm) {  // the pre-norm gradients go to scratch; dq, dk then point there
    const int qn = block_param(p, "q_norm"), kn = block_param(p, "k_norm");
    scratch_b_.resize(N * H * hd);
    scratch_c_.resize(N * Hkv * hd);
    ops_.rmsnorm_backward(scratch_b_.data(), grad(qn), dq, a.q_pre_norm.data(), value(qn),
                          a.q_rstd.data(), N * H, hd, false);
    ops_.rmsnorm_backward(scratch_c_.data(), grad(kn), dk, a.k_pre_norm.data(), value(kn),
                          a.k_rstd.data(), N * Hkv, hd, false);
    dq = scratch_b_.data();
    dk = scratch_c_.data();
  }
  const int wq = block_param(p, "wq"), wk = block_param(p, "wk"), wv = block_param(p, "wv");
  ops_.linear_backward(dx, grad(wq), dq, a.x, value(wq), N, d, H * hd, false);
  ops_.linear_backward(dx, grad(wk), dk, a.x, value(wk), N, d, Hkv * hd, true);
  ops_.linear_backward(dx, grad(wv), dv, a.x, value(wv), N, d, Hkv * hd, true);
}

template <class T>
void Backbone<T>::ffn_forward(int p, const T* x, T* y) {
  const int64_t N = rows();
  const int d = config_.d_model, ff = config_.ff_dim();
  FfnCache& f = ffn_[p];
  f.x = x;
  f.a.resize(N * ff);
  f.b.resize(N * ff);
  f.h.resize(N * ff);
  ops_.linear_forward(f.a.data(), x, value(block_param(p, "w1")), N, d, ff);
  ops_.linear_forward(f.b.data(), x, value(block_param(p, "w3")), N, d, ff);
  ops_.swiglu_forward(f.h.data(), f.a.data(), f.b.data(), N * ff);
  ops_.linear_forward(y, f.h.data(), value(block_param(p, "w2")), N, ff, d);
}

template <class T>
void Backbone<T>::ffn_backward(int p, const T* dy, T* dx) {
  const int64_t N = rows();
  const int d = config_.d_model, ff = config_.ff_dim();
  FfnCache& f = ffn_[p];
  scratch_a_.resize(N * ff);
  scratch_b_.resize(N * ff);
  scratch_c_.resize(N * ff);
  T *dh = scratch_a_.data(), *da = scratch_b_.data(), *db = scratch_c_.data();
  const int w1 = block_param(p, "w1"), w2 = block_param(p, "w2"), w3 = block_param(p, "w3");
  ops_.linear_backward(dh, grad(w2), dy, f.h.data(), value(w2), N, ff, d, false);
  ops_.swiglu_backward(da, db, dh, f.a.data(), f.b.data(), N * ff);
  ops_.linear_backward(dx, grad(w1), da, f.x, value(w1), N, d, ff, false);
  ops_.linear_backward(dx, grad(w3), db, f.x, value(w3), N, d, ff, true);
}

template <class T>
void Backbone<T>::release_caches(int p) {
  attention_[p] = {};
  ffn_[p] = {};
}

template <class T>
void Backbone<T>::rmsnorm_forward(int gain_id, const T* x, T* y, NormCache<T>& cache, int64_t rows,
                                  int width) {
  cache.x = x;
  cache.rstd.resize(rows);
  ops_.rmsnorm_forward(y, cache.rstd.data(), x, gain_id >= 0 ? value(gain_id) : nullptr, rows,
                       width, config_.norm_eps);
}

template <class T>
void Backbone<T>::rmsnorm_backward(int gain_id, const T* dy, T* dx, NormCache<T>& cache,
                                   int64_t rows, int width, bool accumulate_dx) {
  ops_.rmsnorm_backward(dx, gain_id >= 0 ? grad(gain_id) : nullptr, dy, cache.x,
                        gain_id >= 0 ? value(gain_id) : nullptr, cache.rstd.data(), rows, width,
                        accumulate_dx);
}

template <class T>
void Backbone<T>::layernorm_forward(int gain_id, const T* x, T* y, NormCache<T>& cache,
                                    int64_t rows, int width) {
  cache.x = x;
  cache.rstd.resize(rows);
  cache.mean.resize(rows);
  ops_.layernorm_forward(y, cache.mean.data(), cache.rstd.data(), x,
                         gain_id >= 0 ? value(gain_id) : nullptr, rows, width, config_.norm_eps);
}

template <class T>
void Backbone<T>::layernorm_backward(int gain_id, const T* dy, T* dx, NormCache<T>& cache,
                                     int64_t rows, int width, bool accumulate_dx) {
  ops_.layernorm_backward(dx, gain_id >= 0 ? grad(gain_id) : nullptr, dy, cache.x,
                          gain_id >= 0 ? value(gain_id) : nullptr, cache.mean.data(),
                          cache.rstd.data(), rows, width, accumulate_dx);
}

template <class T>
void Backbone<T>::rope(T* x, int heads, bool inverse) {
  ops_.rope(x, batch_, seq_len_, heads, config_.head_dim(), config_.rope_theta, inverse);
}

template <class T>
void Backbone<T>::observe_sublayer(int k, const T* input, const T* output, int width) {
  if (!observer || !observer->sublayer) return;
  if (width < 0) width = d();
  const T* in = host_view(input, rows() * width);
  std::swap(observed_[0], observed_[1]);  // keep `in` while `out` is copied
  observer->sublayer(k, in, host_view(output, rows() * width), rows(), width);
}

template <class T>
void Backbone<T>::observe_depth_state(int l, const T* state, int width) {
  if (!observer || !observer->depth_state) return;
  if (width < 0) width = d();
  observer->depth_state(l, host_view(state, rows() * width), rows(), width);
}

template <class T>
const T* Backbone<T>::host_view(const T* data, int64_t count) {
  if (ops_.space() == MemorySpace::host) return data;
  observed_[0].resize(count);
  memory::copy(observed_[0].data(), MemorySpace::host, data, ops_.space(), count * sizeof(T));
  return observed_[0].data();
}

template class Backbone<float>;
template class Backbone<double>;

}  // namespace db
