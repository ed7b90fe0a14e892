// The shared LLaMA-like backbone (spec §0) as building blocks for the residual designs:
// the attention and SwiGLU sublayer cores (without any norm or residual), RMSNorm/LayerNorm,
// the block schedule (skip and swap for the diagnostics) and observation hooks. A design
// composes these into a forward and a backward pass; it never touches the embedding, the LM
// head or the loss.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/buffer.hpp"
#include "core/error.hpp"
#include "model/model_config.hpp"
#include "model/parameters.hpp"
#include "model/recompute.hpp"
#include "model/sublayer_cores.hpp"
#include "ops/ops.hpp"

namespace db {

// What a norm's forward keeps for its backward: its input x is not copied, the caller keeps it
// unchanged until the backward (every state writes each sublayer into buffers of its own).
template <class T>
struct NormCache {
  const T* x = nullptr;
  Buffer<T> mean, rstd;
  void release() {
    mean = {};
    rstd = {};
  }
};

// Receives the tensors a forward pass produces, for the diagnostics. Pointers are host memory
// (copied there from a GPU), valid only during the call. `width` is d (or n·d for multi-stream
// designs).
template <class T>
struct ForwardObserver {
  // Sublayer k (attention of block i = 2i, FFN = 2i+1): its input (after any norm the design
  // applies before the core) and its raw output.
  std::function<void(int k, const T* input, const T* output, int64_t rows, int width)> sublayer;
  // Depth state z_l, l = 0..L (diagnostics.md "Depth states").
  std::function<void(int l, const T* state, int64_t rows, int width)> depth_state;
};

template <class T>
class Backbone {
 public:
  // bf16_storage: the cores store their activations in bf16 (ops.bf16_storage() must exist).
  Backbone(const ModelConfig& config, const ParameterLayout& layout, ParameterStore<T>& params,
           Ops<T>& ops, bool bf16_storage = false);
  ~Backbone();

  // Declares the backbone's own parameters (embedding, head, final norm, block matrices).
  static void declare(ParameterLayout& layout, const ModelConfig& config);

  const ModelConfig& config() const { return config_; }
  // The backend every design computes through.
  Ops<T>& ops() { return ops_; }
  int d() const { return config_.d_model; }
  int n_layer() const { return config_.n_layer; }
  int64_t rows() const { return batch_ * seq_len_; }
  int64_t batch() const { return batch_; }
  int seq_len() const { return seq_len_; }
  void set_batch(int64_t batch, int seq_len);

  // --- the block schedule: position p runs the parameters of param_block(p) ---------------
  int param_block(int p) const { return schedule_[p]; }
  bool skipped(int p) const { return schedule_[p] < 0; }
  void skip_block(int p) { schedule_[p] = -1; }
  void swap_blocks(int i, int j) { std::swap(schedule_[i], schedule_[j]); }
  void reset_schedule();

  // Parameter id of `blocks.{param_block(p)}.{suffix}` (travels with the block on a swap).
  int block_param(int p, const std::string& suffix) const;
  // A parameter's values, to read (a design never writes the weights: only the optimizer and
  // the loaders do, through the ParameterStore, which keeps the bf16 copy's bookkeeping).
  const T* value(int id) const { return std::as_const(params_).value(id); }
  T* grad(int id) { return params_.grad(id); }
  // A parameter's values copied to the host, for a design's diagnostics (a gated design's
  // path_weights reads its gates); it waits for the device, so not inside a forward or backward.
  std::vector<double> value_to_host(int id) const;
  // bf16 storage: parameter id's bf16 copy, which the cores' products read. db::Error when it is
  // stale (refresh_weight_copy was not called since the weights last changed).
  const bfloat16* bf16_weight(int id) const { return params_.bf16_value(id); }
  // bf16 storage: rounds the weights into their bf16 copy unless it is fresh (the AdamW step
  // writes it; loads, init and pokes leave it stale). Call it before a forward and outside a
  // recorded micro-batch (Ops::run_captured), where a rounding pass would be replayed each time.
  // Nothing without bf16 storage.
  void refresh_weight_copy();
  const ParameterLayout& layout() const { return layout_; }

  // --- sublayer cores: y = Attn(x) and y = FFN(x) of the block at position p ---------------
  // (sublayer_cores.hpp). A core keeps its input x by pointer or as a rounded copy: the caller
  // keeps x unchanged until the backward, whose dx must be another buffer.
  void attention_forward(int p, const T* x, T* y) { cores_->attention_forward(*this, p, x, y); }
  void attention_backward(int p, const T* dy, T* dx) {  // dx overwritten, weight grads added
    cores_->attention_backward(*this, p, dy, dx);
  }
  void ffn_forward(int p, const T* x, T* y) { cores_->ffn_forward(*this, p, x, y); }
  void ffn_backward(int p, const T* dy, T* dx) { cores_->ffn_backward(*this, p, dy, dx); }
  // Whether the cores store their activations in bf16 (train.activation_dtype), else in T.
  bool bf16_storage() const { return bf16_storage_; }
  // The cores with storage type S, for designs that reach into them (MoDA): S must be bfloat16
  // when bf16_storage(), else T.
  template <class S>
  SublayerCores<T, S>& cores() {
    auto* typed = dynamic_cast<SublayerCores<T, S>*>(cores_.get());
    DB_REQUIRE(typed, "the sublayer cores store another type");
    return *typed;
  }

  // --- activation recomputation (train.recompute, layer_loop.hpp) --------------------------
  bool recompute_blocks() const { return recompute_ == Recompute::blocks; }
  void set_recompute(Recompute r) { recompute_ = r; }

  // --- train.fused_kernels (ops_options.hpp): whether the designs and cores call their fused
  // ops (add + norm, combine + norm, QK-norm + RoPE) or the separate ones.
  bool fused_kernels() const { return fused_kernels_; }
  void set_fused_kernels(bool on) { fused_kernels_ = on; }

  // --- train.state_dtype (ops_options.hpp): whether the design rounds its own state and its
  // gradients to bf16 between sublayers (model/residual/state_rounding.hpp).
  bool bf16_state() const { return bf16_state_; }
  void set_bf16_state(bool on) { bf16_state_ = on; }
  // Frees the attention and FFN caches of position p (its forward is re-run before its backward).
  void release_caches(int p) { cores_->release(p); }

  // --- norms over rows of width `width` (gain_id < 0: no gain) ----------------------------
  void rmsnorm_forward(int gain_id, const T* x, T* y, NormCache<T>& cache, int64_t rows, int width);
  void rmsnorm_backward(int gain_id, const T* dy, T* dx, NormCache<T>& cache, int64_t rows,
                        int width, bool accumulate_dx = false);
  void layernorm_forward(int gain_id, const T* x, T* y, NormCache<T>& cache, int64_t rows,
                         int width);
  void layernorm_backward(int gain_id, const T* dy, T* dx, NormCache<T>& cache, int64_t rows,
                          int width, bool accumulate_dx = false);
  // The residual add before a norm in the same pass (ops.hpp, add_rmsnorm_forward): sum =
  // alpha·x + branch (sum may be branch), then the norm of sum into y, sum kept as its input.
  void add_rmsnorm_forward(int gain_id, T* sum, const T* x, const T* branch, double alpha, T* y,
                           NormCache<T>& cache, int64_t rows, int width);
  void add_layernorm_forward(int gain_id, T* sum, const T* x, const T* branch, double alpha, T* y,
                             NormCache<T>& cache, int64_t rows, int width);
  // Sandwich-LN's branch norm before that add (ops.hpp, norm_add_rmsnorm_forward): sum = x +
  // RMSNorm(branch; branch_gain_id), its statistics in branch_cache (input: branch), then the
  // norm of sum into y as above.
  void norm_add_rmsnorm_forward(int branch_gain_id, NormCache<T>& branch_cache, int gain_id, T* sum,
                                const T* x, const T* branch, T* y, NormCache<T>& cache,
                                int64_t rows, int width);

  // --- observation -------------------------------------------------------------------------
  ForwardObserver<T>* observer = nullptr;
  // Told by the layer loop's backward that no later step of this backward pass adds to the
  // gradients of position p's block (p = n_layer: of the readout, final norm and LM head), so
  // the trainer can start their all-reduce (train/gradient_buckets.hpp). Unset: nothing.
  std::function<void(int p)> on_gradients_final;
  void gradients_final(int p) {
    if (on_gradients_final) on_gradients_final(p);
  }
  void observe_sublayer(int k, const T* input, const T* output, int width = -1);
  void observe_depth_state(int l, const T* state, int width = -1);

 private:
  // Hands a tensor to an observer in host memory.
  const T* host_view(const T* data, int64_t count);

  const ModelConfig config_;
  const ParameterLayout& layout_;
  ParameterStore<T>& params_;
  Ops<T>& ops_;
  std::vector<int> schedule_;
  Recompute recompute_ = Recompute::none;
  bool fused_kernels_ = true;
  bool bf16_state_ = false;
  int64_t batch_ = 0;
  int seq_len_ = 0;
  bool bf16_storage_ = false;
  StorageOps<T, bfloat16>* bf16_ops_ = nullptr;      // bf16 storage: rounds the weight copy
  std::unique_ptr<StorageOps<T, T>> same_type_ops_;  // the cores' ops when they store T
  std::unique_ptr<SublayerCoresBase<T>> cores_;
  std::vector<T> observed_[2];  // host copies for the observers
};

}  // namespace db
