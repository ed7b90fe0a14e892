#include "model/backbone.hpp"

#include <algorithm>
#include <numeric>
#include <type_traits>
#include <utility>

#include "core/error.hpp"
#include "ops/storage_ops_same_type.hpp"

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
                      ParameterStore<T>& params, Ops<T>& ops, bool bf16_storage)
    : config_(config),
      layout_(layout),
      params_(params),
      ops_(ops),
      schedule_(config.n_layer),
      bf16_storage_(bf16_storage) {
  reset_schedule();
  if (!bf16_storage) {
    same_type_ops_ = std::make_unique<SameTypeStorageOps<T>>(ops);
    cores_ = std::make_unique<SublayerCores<T, T>>(*same_type_ops_, config.n_layer);
    return;
  }
  StorageOps<T, bfloat16>* bf16_ops = ops.bf16_storage();
  if constexpr (std::is_same_v<T, float>)
    if (bf16_ops) {
      bf16_ops_ = bf16_ops;
      cores_ = std::make_unique<SublayerCores<T, bfloat16>>(*bf16_ops, config.n_layer);
      params_.keep_bf16_copy();
      return;
    }
  throw Error(std::string("train.activation_dtype = bf16: the ") + ops.name() +
              " ops of this model type cannot store activations in bf16");
}

template <class T>
Backbone<T>::~Backbone() = default;

template <class T>
void Backbone<T>::refresh_weight_copy() {
  if (!bf16_ops_ || params_.bf16_copy_fresh()) return;
  // The values are only read; the store is told the copy matches them once it is written.
  const Buffer<T>& values = std::as_const(params_).value_buffer();
  bf16_ops_->narrow(params_.bf16_copy_for_write(), values.data(), int64_t(values.size()));
  params_.bf16_copy_written();
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
void Backbone<T>::add_rmsnorm_forward(int gain_id, T* sum, const T* x, const T* branch,
                                      double alpha, T* y, NormCache<T>& cache, int64_t rows,
                                      int width) {
  cache.x = sum;
  cache.rstd.resize(rows);
  ops_.add_rmsnorm_forward(sum, y, cache.rstd.data(), x, branch, T(alpha),
                           gain_id >= 0 ? value(gain_id) : nullptr, rows, width, config_.norm_eps);
}

template <class T>
void Backbone<T>::norm_add_rmsnorm_forward(int branch_gain_id, NormCache<T>& branch_cache,
                                           int gain_id, T* sum, const T* x, const T* branch, T* y,
                                           NormCache<T>& cache, int64_t rows, int width) {
  branch_cache.x = branch;
  branch_cache.rstd.resize(rows);
  cache.x = sum;
  cache.rstd.resize(rows);
  ops_.norm_add_rmsnorm_forward(sum, y, cache.rstd.data(), branch_cache.rstd.data(), x, branch,
                                value(branch_gain_id), gain_id >= 0 ? value(gain_id) : nullptr,
                                rows, width, config_.norm_eps);
}

template <class T>
void Backbone<T>::add_layernorm_forward(int gain_id, T* sum, const T* x, const T* branch,
                                        double alpha, T* y, NormCache<T>& cache, int64_t rows,
                                        int width) {
  cache.x = sum;
  cache.rstd.resize(rows);
  cache.mean.resize(rows);
  ops_.add_layernorm_forward(sum, y, cache.mean.data(), cache.rstd.data(), x, branch, T(alpha),
                             gain_id >= 0 ? value(gain_id) : nullptr, rows, width,
                             config_.norm_eps);
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

template <class T>
std::vector<double> Backbone<T>::value_to_host(int id) const {
  std::vector<T> host(size_t(layout_.spec(id).size()));
  memory::copy(host.data(), MemorySpace::host, value(id), ops_.space(), host.size() * sizeof(T));
  return std::vector<double>(host.begin(), host.end());
}

template class Backbone<float>;
template class Backbone<double>;

}  // namespace db
