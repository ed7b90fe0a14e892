// The shared LLaMA-like backbone (spec §0) as building blocks for the residual designs:
// the attention and SwiGLU sublayer cores (without any norm or residual), RMSNorm/LayerNorm,
// the block schedule (skip and swap for the diagnostics) and observation hooks. A design
// composes these into a forward and a backward pass; it never touches the embedding, the LM
// head or the loss.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "model/model_config.hpp"
#include "model/parameters.hpp"
#include "ops/ops.hpp"

namespace db {

// What a norm's forward keeps for its backward.
template <class T>
struct NormCache {
  Buffer<T> x, mean, rstd;
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
  Backbone(const ModelConfig& config, const ParameterLayout& layout, ParameterStore<T>& params,
           Ops<T>& ops);

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
  T* value(int id) { return params_.value(id); }
  T* grad(int id) { return params_.grad(id); }
  const ParameterLayout& layout() const { return layout_; }

  // --- sublayer cores: y = Attn(x) and y = FFN(x) of the block at position p ---------------
  void attention_forward(int p, const T* x, T* y);
  void attention_backward(int p, const T* dy, T* dx);  // dx overwritten, weight grads added
  // The attention core in stages, for designs that replace its softmax (MoDA):
  // attention_forward = attention_project → ops().attention_forward → attention_output.
  // attention_project fills q, k (after QK-norm and RoPE) and v of attention_cache(p) and sizes
  // o and lse; k_unrotated (optional, [rows, H_kv·hd]) receives k after QK-norm, before RoPE.
  void attention_project(int p, const T* x, T* k_unrotated = nullptr);
  void attention_output(int p, T* y);  // y = o·W_oᵀ with o of attention_cache(p)
  void attention_output_backward(int p, const T* dy, T* d_o);  // d_o overwritten, W_o grad added
  // dq, dk: gradients of the rotated q, k (consumed: used as scratch); dk_unrotated (optional):
  // a further gradient of the pre-RoPE k. dx overwritten, W_q, W_k, W_v (and QK-norm) grads added.
  void attention_project_backward(int p, T* dq, T* dk, const T* dv, T* dx,
                                  const T* dk_unrotated = nullptr);
  void ffn_forward(int p, const T* x, T* y);
  void ffn_backward(int p, const T* dy, T* dx);

  // --- norms over rows of width `width` (gain_id < 0: no gain) ----------------------------
  void rmsnorm_forward(int gain_id, const T* x, T* y, NormCache<T>& cache, int64_t rows, int width);
  void rmsnorm_backward(int gain_id, const T* dy, T* dx, NormCache<T>& cache, int64_t rows,
                        int width, bool accumulate_dx = false);
  void layernorm_forward(int gain_id, const T* x, T* y, NormCache<T>& cache, int64_t rows,
                         int width);
  void layernorm_backward(int gain_id, const T* dy, T* dx, NormCache<T>& cache, int64_t rows,
                          int width, bool accumulate_dx = false);

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

  // Attention internals of position p, for designs that extend attention (MoDA).
  struct AttentionCache {
    Buffer<T> x, q, k, v, o, lse, q_pre_norm, k_pre_norm, q_rstd, k_rstd;
  };
  AttentionCache& attention_cache(int p) { return attention_[p]; }
  // RoPE at this batch's positions on x [rows, heads, head_dim]; inverse for the backward.
  void rope(T* x, int heads, bool inverse);

 private:
  struct FfnCache {
    Buffer<T> x, a, b, h;
  };
  // Hands a tensor to an observer in host memory.
  const T* host_view(const T* data, int64_t count);

  const ModelConfig config_;
  const ParameterLayout& layout_;
  ParameterStore<T>& params_;
  Ops<T>& ops_;
  std::vector<int> schedule_;
  int64_t batch_ = 0;
  int seq_len_ = 0;
  std::vector<AttentionCache> attention_;
  std::vector<FfnCache> ffn_;
  Buffer<T> scratch_a_, scratch_b_, scratch_c_, dq_, dk_, dv_;
  std::vector<T> observed_[2];  // host copies for the observers
};

}  // namespace db
