#include "model/backbone.hpp"

#include <algorithm>
#include <numeric>

#include "core/error.hpp"
#include "ops/cpu/attention.hpp"
#include "ops/cpu/linear.hpp"
#include "ops/cpu/rmsnorm.hpp"
#include "ops/cpu/swiglu.hpp"

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
                      ParameterStore<T>& params)
    : config_(config), layout_(layout), params_(params), schedule_(config.n_layer) {
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
  if (seq_len != rope_.seq_len)
    rope_ = cpu::RopeTable(seq_len, config_.head_dim(), config_.rope_theta);
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
  cpu::attention_forward(a.o.data(), a.lse.data(), a.q.data(), a.k.data(), a.v.data(),
                         {batch_, seq_len_, c.n_head, c.kv_heads(), c.head_dim()});
  attention_output(p, y);
}

template <class T>
void Backbone<T>::attention_backward(int p, const T* dy, T* dx) {
  const ModelConfig& c = config_;
  const int64_t N = rows();
  const int hd = c.head_dim(), H = c.n_head, Hkv = c.kv_heads();
  AttentionCache& a = attention_[p];
  std::vector<T>& d_o = scratch_a_;
  d_o.resize(N * H * hd);
  attention_output_backward(p, dy, d_o.data());
  std::vector<T> dq(N * H * hd), dk(N * Hkv * hd), dv(N * Hkv * hd);
  cpu::attention_backward(dq.data(), dk.data(), dv.data(), d_o.data(), a.o.data(), a.lse.data(),
                          a.q.data(), a.k.data(), a.v.data(), {batch_, seq_len_, H, Hkv, hd});
  attention_project_backward(p, dq.data(), dk.data(), dv.data(), dx);
}

template <class T>
void Backbone<T>::attention_project(int p, const T* x, T* k_unrotated) {
  const ModelConfig& c = config_;
  const int64_t N = rows();
  const int d = c.d_model, hd = c.head_dim(), H = c.n_head, Hkv = c.kv_heads();
  AttentionCache& a = attention_[p];
  a.x.assign(x, x + N * d);
  a.q.resize(N * H * hd);
  a.k.resize(N * Hkv * hd);
  a.v.resize(N * Hkv * hd);
  a.o.resize(N * H * hd);
  a.lse.resize(N * H);
  cpu::linear_forward(a.q.data(), x, value(block_param(p, "wq")), N, d, H * hd);
  cpu::linear_forward(a.k.data(), x, value(block_param(p, "wk")), N, d, Hkv * hd);
  cpu::linear_forward(a.v.data(), x, value(block_param(p, "wv")), N, d, Hkv * hd);
  if (c.qk_norm) {  // RMSNorm over head_dim on q and k before RoPE (Qwen3)
    a.q_pre_norm = a.q;
    a.k_pre_norm = a.k;
    a.q_rstd.resize(N * H);
    a.k_rstd.resize(N * Hkv);
    cpu::rmsnorm_forward(a.q.data(), a.q_rstd.data(), a.q_pre_norm.data(),
                         value(block_param(p, "q_norm")), N * H, hd, c.norm_eps);
    cpu::rmsnorm_forward(a.k.data(), a.k_rstd.data(), a.k_pre_norm.data(),
                         value(block_param(p, "k_norm")), N * Hkv, hd, c.norm_eps);
  }
  if (k_unrotated) std::copy(a.k.begin(), a.k.end(), k_unrotated);
  cpu::rope_apply(a.q.data(), rope_, batch_, seq_len_, H, false);
  cpu::rope_apply(a.k.data(), rope_, batch_, seq_len_, Hkv, false);
}

template <class T>
void Backbone<T>::attention_output(int p, T* y) {
  const ModelConfig& c = config_;
  cpu::linear_forward(y, attention_[p].o.data(), value(block_param(p, "wo")), rows(),
                      c.n_head * c.head_dim(), c.d_model);
}

template <class T>
void Backbone<T>::attention_output_backward(int p, const T* dy, T* d_o) {
  const ModelConfig& c = config_;
  const int wo = block_param(p, "wo");
  cpu::linear_backward(d_o, grad(wo), dy, attention_[p].o.data(), value(wo), rows(),
                       c.n_head * c.head_dim(), c.d_model);
}

template <class T>
void Backbone<T>::attention_project_backward(int p, T* dq, T* dk, const T* dv, T* dx,
                                             const T* dk_unrotated) {
  const ModelConfig& c = config_;
  const int64_t N = rows();
  const int d = c.d_model, hd = c.head_dim(), H = c.n_head, Hkv = c.kv_heads();
  AttentionCache& a = attention_[p];
  cpu::rope_apply(dq, rope_, batch_, seq_len_, H, true);
  cpu::rope_apply(dk, rope_, batch_, seq_len_, Hkv, true);
  if (dk_unrotated)
    for (int64_t i = 0; i < N * Hkv * hd; ++i) dk[i] += dk_unrotated[i];
  std::vector<T> dq_pre, dk_pre;
  if (c.qk_norm) {
    const int qn = block_param(p, "q_norm"), kn = block_param(p, "k_norm");
    dq_pre.resize(N * H * hd);
    dk_pre.resize(N * Hkv * hd);
    cpu::rmsnorm_backward(dq_pre.data(), grad(qn), dq, a.q_pre_norm.data(), value(qn),
                          a.q_rstd.data(), N * H, hd);
    cpu::rmsnorm_backward(dk_pre.data(), grad(kn), dk, a.k_pre_norm.data(), value(kn),
                          a.k_rstd.data(), N * Hkv, hd);
    dq = dq_pre.data();
    dk = dk_pre.data();
  }
  const int wq = block_param(p, "wq"), wk = block_param(p, "wk"), wv = block_param(p, "wv");
  cpu::linear_backward(dx, grad(wq), dq, a.x.data(), value(wq), N, d, H * hd);
  cpu::linear_backward(dx, grad(wk), dk, a.x.data(), value(wk), N, d, Hkv * hd, true);
  cpu::linear_backward(dx, grad(wv), dv, a.x.data(), value(wv), N, d, Hkv * hd, true);
}

template <class T>
void Backbone<T>::ffn_forward(int p, const T* x, T* y) {
  const int64_t N = rows();
  const int d = config_.d_model, ff = config_.ff_dim();
  FfnCache& f = ffn_[p];
  f.x.assign(x, x + N * d);
  f.a.resize(N * ff);
  f.b.resize(N * ff);
  f.h.resize(N * ff);
  cpu::linear_forward(f.a.data(), x, value(block_param(p, "w1")), N, d, ff);
  cpu::linear_forward(f.b.data(), x, value(block_param(p, "w3")), N, d, ff);
  cpu::swiglu_forward(f.h.data(), f.a.data(), f.b.data(), N * ff);
  cpu::linear_forward(y, f.h.data(), value(block_param(p, "w2")), N, ff, d);
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
  cpu::linear_backward(dh, grad(w2), dy, f.h.data(), value(w2), N, ff, d);
  cpu::swiglu_backward(da, db, dh, f.a.data(), f.b.data(), N * ff);
  cpu::linear_backward(dx, grad(w1), da, f.x.data(), value(w1), N, d, ff);
  cpu::linear_backward(dx, grad(w3), db, f.x.data(), value(w3), N, d, ff, true);
}

template <class T>
void Backbone<T>::rmsnorm_forward(int gain_id, const T* x, T* y, NormCache<T>& cache, int64_t rows,
                                  int width) {
  cache.x.assign(x, x + rows * width);
  cache.rstd.resize(rows);
  cpu::rmsnorm_forward(y, cache.rstd.data(), x, gain_id >= 0 ? value(gain_id) : nullptr, rows,
                       width, config_.norm_eps);
}

template <class T>
void Backbone<T>::rmsnorm_backward(int gain_id, const T* dy, T* dx, NormCache<T>& cache,
                                   int64_t rows, int width, bool accumulate_dx) {
  cpu::rmsnorm_backward(dx, gain_id >= 0 ? grad(gain_id) : nullptr, dy, cache.x.data(),
                        gain_id >= 0 ? value(gain_id) : nullptr, cache.rstd.data(), rows, width,
                        accumulate_dx);
}

template <class T>
void Backbone<T>::layernorm_forward(int gain_id, const T* x, T* y, NormCache<T>& cache,
                                    int64_t rows, int width) {
  cache.x.assign(x, x + rows * width);
  cache.rstd.resize(rows);
  cache.mean.resize(rows);
  cpu::layernorm_forward(y, cache.mean.data(), cache.rstd.data(), x,
                         gain_id >= 0 ? value(gain_id) : nullptr, rows, width, config_.norm_eps);
}

template <class T>
void Backbone<T>::layernorm_backward(int gain_id, const T* dy, T* dx, NormCache<T>& cache,
                                     int64_t rows, int width, bool accumulate_dx) {
  cpu::layernorm_backward(dx, gain_id >= 0 ? grad(gain_id) : nullptr, dy, cache.x.data(),
                          gain_id >= 0 ? value(gain_id) : nullptr, cache.mean.data(),
                          cache.rstd.data(), rows, width, accumulate_dx);
}

template <class T>
void Backbone<T>::observe_sublayer(int k, const T* input, const T* output, int width) {
  if (observer && observer->sublayer)
    observer->sublayer(k, input, output, rows(), width < 0 ? d() : width);
}

template <class T>
void Backbone<T>::observe_depth_state(int l, const T* state, int width) {
  if (observer && observer->depth_state)
    observer->depth_state(l, state, rows(), width < 0 ? d() : width);
}

template class Backbone<float>;
template class Backbone<double>;

}  // namespace db
