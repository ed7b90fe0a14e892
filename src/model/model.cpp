#include "model/model.hpp"

#include "core/error.hpp"
#include "model/residual/registry.hpp"
#include "ops/cpu/cross_entropy.hpp"
#include "ops/cpu/embedding.hpp"

namespace db {

ParameterLayout build_layout(const ModelConfig& config) {
  config.validate();
  const DesignInfo& design = find_design(config.arch);
  ParameterLayout layout;
  Backbone<float>::declare(layout, config);
  design.declare(layout, config);
  return layout;
}

ParameterCounts count_parameters(const ModelConfig& config) {
  const ParameterLayout layout = build_layout(config);
  ParameterCounts counts;
  counts.total = layout.total_size();
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

template <class T>
Model<T>::Model(const ModelConfig& config)
    : config_(config),
      layout_(std::make_unique<ParameterLayout>(build_layout(config))),
      head_id_(layout_->id(config.tie_embeddings ? "embed" : "lm_head")) {
  params_ = std::make_unique<ParameterStore<T>>(*layout_);
  backbone_ = std::make_unique<Backbone<T>>(config_, *layout_, *params_);
  design_ = make_design<T>(find_design(config.arch), config_);
}

template <class T>
void Model<T>::forward_features(const int32_t* tokens, int64_t batch, int seq_len) {
  const int64_t rows = batch * seq_len;
  const int d = config_.d_model;
  tokens_.assign(tokens, tokens + rows);
  targets_.resize(rows);
  for (int64_t n = 0; n < rows; ++n) {
    DB_REQUIRE(tokens[n] >= 0 && tokens[n] < config_.vocab_size,
               "token id " + std::to_string(tokens[n]) + " outside the vocabulary");
    targets_[n] = (n % seq_len == seq_len - 1) ? -1 : tokens[n + 1];
  }
  backbone_->set_batch(batch, seq_len);
  x0_.resize(rows * d);
  features_.resize(rows * d);
  cpu::embedding_forward(x0_.data(), tokens_.data(), params_->value(layout_->id("embed")), rows, d);
  design_->forward(*backbone_, x0_.data(), features_.data());
}

template <class T>
double Model<T>::forward_backward(const int32_t* tokens, int64_t batch, int seq_len,
                                  double grad_scale) {
  forward_features(tokens, batch, seq_len);
  const int64_t rows = batch * seq_len;
  const int d = config_.d_model;
  const int head = head_id_;
  dfeatures_.resize(rows * d);
  dx0_.resize(rows * d);
  const double loss = cpu::lm_head_cross_entropy(
      features_.data(), params_->value(head), targets_.data(), {rows, d, config_.vocab_size},
      dfeatures_.data(), params_->grad(head), grad_scale);
  design_->backward(*backbone_, dfeatures_.data(), dx0_.data());
  cpu::embedding_backward(params_->grad(layout_->id("embed")), tokens_.data(), dx0_.data(), rows,
                          d);
  return loss;
}

template <class T>
double Model<T>::forward_loss(const int32_t* tokens, int64_t batch, int seq_len) {
  forward_features(tokens, batch, seq_len);
  return cpu::lm_head_cross_entropy<T>(features_.data(), params_->value(head_id_), targets_.data(),
                                       {batch * seq_len, config_.d_model, config_.vocab_size},
                                       nullptr, nullptr, 0.0);
}

template <class T>
void Model<T>::last_position_losses(std::vector<double>& out) const {
  const int64_t rows = int64_t(targets_.size()), d = config_.d_model;
  const T* head = params_->value(head_id_);
  out.resize(rows);
  for (int64_t r = 0; r < rows; ++r)  // one row at a time: the fused head returns sums only
    out[r] = cpu::lm_head_cross_entropy<T>(features_.data() + r * d, head, targets_.data() + r,
                                           {1, config_.d_model, config_.vocab_size}, nullptr,
                                           nullptr, 0.0);
}

template <class T>
void Model<T>::logits(const int32_t* tokens, int64_t batch, int seq_len, std::vector<T>& out) {
  forward_features(tokens, batch, seq_len);
  out.resize(batch * seq_len * config_.vocab_size);
  cpu::lm_head_logits(out.data(), features_.data(), params_->value(head_id_),
                      {batch * seq_len, config_.d_model, config_.vocab_size});
}

template class Model<float>;
template class Model<double>;

}  // namespace db
