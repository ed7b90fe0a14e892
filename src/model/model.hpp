// A whole language model: embedding → residual design (blocks, readout) → LM head and
// cross-entropy (spec §0). The same class runs on every backend: the CPU in float (training)
// and double (gradient checks), the GPU in float. Parameters, activations and caches live in
// the backend's memory; the methods take and return host data.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "core/buffer.hpp"
#include "model/backbone.hpp"
#include "model/model_config.hpp"
#include "model/parameters.hpp"
#include "model/residual/design.hpp"
#include "ops/backend.hpp"

namespace db {

// Backbone and design parameters of a config, without allocating them.
ParameterLayout build_layout(const ModelConfig& config);
// Exact counts: total, backbone (blocks only) and embedding (V·d).
ParameterCounts count_parameters(const ModelConfig& config);
// PaLM convention: 6·N + 12·L·d·T, N = all parameters but the input embedding (a lookup, no
// matmul), plus what the design adds.
double flops_per_token(const ModelConfig& config, int seq_len);

template <class T>
class Model {
 public:
  explicit Model(const ModelConfig& config, const Backend& backend = find_backend("cpu"),
                 const OpsOptions& options = {});
  ~Model();

  const ModelConfig& config() const { return config_; }
  const ParameterLayout& layout() const { return *layout_; }
  ParameterStore<T>& params() { return *params_; }
  Backbone<T>& backbone() { return *backbone_; }
  ResidualDesign<T>& design() { return *design_; }
  Ops<T>& ops() { return *ops_; }
  MemorySpace space() const { return ops_->space(); }
  // The LM head's parameter: `lm_head`, or `embed` when the embeddings are tied.
  int head_id() const { return head_id_; }

  void initialize(uint64_t seed) { params_->initialize(seed); }
  // train.recompute: what the forward keeps for the backward (layer_loop.hpp).
  void set_recompute(Recompute r) { backbone_->set_recompute(r); }

  // tokens (host): [batch, seq_len] windows. The loss covers positions 0..T−2 of each window
  // (predicting tokens 1..T−1). Adds the summed loss to an accumulator in the backend's memory
  // and the gradients of grad_scale · summed loss to the parameter gradients; reads nothing back,
  // so the micro-batches of a step run without a host synchronisation. The backend may replay
  // the micro-batch from a recording (train.cuda_graphs, Ops::run_captured) unless replayable
  // is false: a micro-batch whose host hooks must act (Backbone::on_gradients_final starting
  // the gradient sums of the step's last backward) runs eagerly.
  void accumulate_forward_backward(const int32_t* tokens, int64_t batch, int seq_len,
                                   double grad_scale, bool replayable = true);
  // The accumulated loss sum (one device-to-host read), and the accumulator back to 0.
  double take_loss_sum();
  // accumulate_forward_backward then take_loss_sum: the summed loss of this micro-batch (plus
  // whatever was accumulated and not taken).
  double forward_backward(const int32_t* tokens, int64_t batch, int seq_len, double grad_scale);
  // Summed loss only.
  double forward_loss(const int32_t* tokens, int64_t batch, int seq_len);
  // Next-token loss of every position of the last forward (0 at the last position of each
  // window, which has no target), from its cached features: per-token losses for evaluation.
  void last_position_losses(std::vector<double>& out) const;
  // Logits [batch·seq_len, V], into host memory.
  void logits(const int32_t* tokens, int64_t batch, int seq_len, std::vector<T>& out);
  // LogitLens: the logits [rows, V] (host) that the design's own readout and the LM head give
  // a depth state [rows, width] (host memory, as an observer received it).
  void readout_logits(const T* state, int64_t rows, int width, std::vector<T>& out);

  static int64_t targets_per_window(int seq_len) { return seq_len - 1; }

 private:
  // Checks and uploads the tokens and derives the targets (outside a recorded micro-batch).
  void stage_tokens(const int32_t* tokens, int64_t batch, int seq_len);
  // Embedding and the design's forward on the staged tokens.
  void forward_features(int64_t batch, int seq_len);
  // What a recorded micro-batch holds: embedding through embedding backward.
  void forward_backward_staged(int64_t batch, int seq_len, double grad_scale);
  // A parameter's values, to read (not counted as a change of the weights: parameters.hpp).
  const T* weight(int id) const { return std::as_const(*params_).value(id); }

  ModelConfig config_;
  std::unique_ptr<Ops<T>> ops_;
  std::unique_ptr<ParameterLayout> layout_;
  int head_id_;
  std::unique_ptr<ParameterStore<T>> params_;
  std::unique_ptr<Backbone<T>> backbone_;
  std::unique_ptr<ResidualDesign<T>> design_;
  Buffer<T> x0_, features_, dfeatures_, dx0_;
  Buffer<int32_t> tokens_, targets_;
  Buffer<double> loss_sum_;       // [1] the micro-batches' losses since take_loss_sum
  Buffer<double> eval_loss_sum_;  // [1] forward_loss's
  int64_t rows_ = 0;
};

}  // namespace db
