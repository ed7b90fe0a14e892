#include "model/model.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "model/next_token_targets.hpp"
#include "model/residual/registry.hpp"

namespace db {

ParameterLayout build_layout(const ModelConfig& config) {
  config.validate();
  const DesignInfo& design = find_design(config.arch);
  ParameterLayout layout;
  Backbone<float>::declare(layout, config);
  declare_design_parameters(design, layout, config);
  return layout;
}

ParameterCounts count_parameters(const ModelConfig& config) {
  const ParameterLayout layout = build_layout(config);
  ParameterCounts counts;
  counts.total = layout.parameter_count();
  counts.backbone = layout.count_with_prefix("blocks.");
  counts.embedding = int64_t(config.vocab_size) * config.d_model;
  return counts;
}

double flops_per_token(const ModelConfig& config, int seq_len) {
  const ParameterCounts counts = count_parameters(config);
  const double n = double(counts.total - counts.embedding);
  return 6.0 * n + 12.0 * config.n_layer * config.d_model * double(seq_len) +
         find_design(config.arch).extra_flops_per_token(config, seq_len);
}

namespace {
template <class T>
std::unique_ptr<ResidualDesign<T>> make_design(const DesignInfo& info, const ModelConfig& c) {
  if constexpr (std::is_same_v<T, float>)
    return info.make_float(c);
  else
    return info.make_double(c);
}
}  // namespace

// Every entry point allocates in the backend's memory space (core/memory.hpp).
template <class T>
Model<T>::Model(const ModelConfig& config, const Backend& backend, const OpsOptions& options)
    : config_(config),
      ops_(make_ops<T>(backend, options)),
      layout_(std::make_unique<ParameterLayout>(build_layout(config))),
      head_id_(layout_->id(config.tie_embeddings ? "embed" : "lm_head")) {
  MemorySpaceScope scope(ops_->space());
  params_ = std::make_unique<ParameterStore<T>>(*layout_);
  backbone_ = std::make_unique<Backbone<T>>(config_, *layout_, *params_, *ops_,
                                            stores_bf16(options, !ops_->space().is_host()));
  backbone_->set_fused_kernels(options.fused_kernels);
  const DesignInfo& design = find_design(config.arch);
  if (options.bf16_state && !design.rounds_state) {
    throw Error("train.state_dtype = bf16: " + config.arch +
                " has no state of its own to round (these do: " + state_rounding_design_names() +
                ")");
  }
  backbone_->set_bf16_state(options.bf16_state);
  design_ = make_design<T>(design, config_);
}

template <class T>
Model<T>::~Model() = default;

// Outside the micro-batch that a backend may capture (Ops::run_captured): the host checks the
// tokens, copies them into the fixed device buffer, and the targets are derived there. The bf16
// weight copy is brought up to date here too (a no-op after an AdamW step, which writes it), so
// that a recorded micro-batch only ever reads it.
template <class T>
void Model<T>::stage_tokens(const int32_t* tokens, int64_t batch, int seq_len) {
  backbone_->refresh_weight_copy();
  const int64_t rows = batch * seq_len;
  for (int64_t n = 0; n < rows; ++n)
    DB_REQUIRE(tokens[n] >= 0 && tokens[n] < config_.vocab_size,
               "token id " + std::to_string(tokens[n]) + " outside the vocabulary");
  rows_ = rows;
  tokens_.resize(rows);
  ops_->upload_tokens(tokens_.data(), tokens, rows);
  targets_.resize(rows);
  next_token_targets(ops_->space(), targets_.data(), tokens_.data(), rows, seq_len);
}

template <class T>
void Model<T>::forward_features(int64_t batch, int seq_len) {
  const int64_t rows = batch * seq_len;
  const int d = config_.d_model;
  backbone_->set_batch(batch, seq_len);
  x0_.resize(rows * d);
  features_.resize(rows * d);
  ops_->embedding_forward(x0_.data(), tokens_.data(), weight(layout_->id("embed")), rows, d);
  design_->forward(*backbone_, x0_.data(), features_.data());
}

template <class T>
void Model<T>::forward_backward_staged(int64_t batch, int seq_len, double grad_scale) {
  forward_features(batch, seq_len);
  const int64_t rows = batch * seq_len;
  const int d = config_.d_model;
  const int head = head_id_;
  dfeatures_.resize(rows * d);
  dx0_.resize(rows * d);
  ops_->cross_entropy(loss_sum_.data(), features_.data(), weight(head), targets_.data(),
                      {rows, d, config_.vocab_size}, dfeatures_.data(), params_->grad(head),
                      grad_scale);
  design_->backward(*backbone_, dfeatures_.data(), dx0_.data());
  ops_->embedding_backward(params_->grad(layout_->id("embed")), tokens_.data(), dx0_.data(), rows,
                           d);
}

template <class T>
void Model<T>::accumulate_forward_backward(const int32_t* tokens, int64_t batch, int seq_len,
                                           double grad_scale, bool replayable) {
  MemorySpaceScope scope(ops_->space());
  if (loss_sum_.empty()) loss_sum_.assign_zeros(1);
  stage_tokens(tokens, batch, seq_len);
  if (!replayable) return forward_backward_staged(batch, seq_len, grad_scale);
  // Everything the micro-batch launches depends on these (the buffers and parameters it uses
  // stay the same): one recorded graph per value on the CUDA backend.
  char key[96];
  std::snprintf(key, sizeof key, "forward_backward B=%lld T=%d grad_scale=%a", (long long)batch,
                seq_len, grad_scale);
  ops_->run_captured(key, [&] { forward_backward_staged(batch, seq_len, grad_scale); });
}

template <class T>
double Model<T>::take_loss_sum() {
  if (loss_sum_.empty()) return 0.0;
  MemorySpaceScope scope(ops_->space());
  double sum = 0;
  loss_sum_.copy_to(&sum, 1, MemorySpace::host);
  loss_sum_.zero();
  return sum;
}

template <class T>
double Model<T>::forward_backward(const int32_t* tokens, int64_t batch, int seq_len,
                                  double grad_scale) {
  accumulate_forward_backward(tokens, batch, seq_len, grad_scale);
  return take_loss_sum();
}

template <class T>
double Model<T>::forward_loss(const int32_t* tokens, int64_t batch, int seq_len) {
  MemorySpaceScope scope(ops_->space());
  stage_tokens(tokens, batch, seq_len);
  forward_features(batch, seq_len);
  eval_loss_sum_.assign_zeros(1);
  ops_->cross_entropy(eval_loss_sum_.data(), features_.data(), weight(head_id_), targets_.data(),
                      {batch * seq_len, config_.d_model, config_.vocab_size}, nullptr, nullptr,
                      0.0);
  double sum = 0;
  eval_loss_sum_.copy_to(&sum, 1, MemorySpace::host);
  return sum;
}

template <class T>
void Model<T>::last_position_losses(std::vector<double>& out) const {
  out.resize(rows_);
  ops_->cross_entropy_rows(out.data(), features_.data(), weight(head_id_), targets_.data(),
                           {rows_, config_.d_model, config_.vocab_size});
}

template <class T>
void Model<T>::logits(const int32_t* tokens, int64_t batch, int seq_len, std::vector<T>& out) {
  MemorySpaceScope scope(ops_->space());
  stage_tokens(tokens, batch, seq_len);
  forward_features(batch, seq_len);
  Buffer<T> logits(batch * seq_len * config_.vocab_size);
  ops_->logits(logits.data(), features_.data(), weight(head_id_),
               {batch * seq_len, config_.d_model, config_.vocab_size});
  out = logits.to_host();
}

template <class T>
void Model<T>::readout_logits(const T* state, int64_t rows, int width, std::vector<T>& out) {
  MemorySpaceScope scope(ops_->space());
  backbone_->refresh_weight_copy();
  Buffer<T> z, features(rows * config_.d_model), logits(rows * config_.vocab_size);
  z.assign(state, rows * width, MemorySpace::host);
  design_->readout_state(*backbone_, z.data(), rows, width, features.data());
  ops_->logits(logits.data(), features.data(), weight(head_id_),
               {rows, config_.d_model, config_.vocab_size});
  out = logits.to_host();
}

template class Model<float>;
template class Model<double>;

}  // namespace db
