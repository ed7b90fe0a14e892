// The attention and SwiGLU cores of every block (spec §0), y = Attn(x) and y = FFN(x), with the
// tensors inside them — q, k, v, o, the FFN's a, b, h and the gradients of all of them — stored
// as S: the model type T, or bf16 under train.activation_dtype = bf16 (ops/storage_ops.hpp).
// A core's input x and output y stay T: they are the design's streams. With S ≠ T a core rounds
// its input once and keeps that copy for its backward, and its products read the weights from
// the parameters' bf16 copy (model/parameters.hpp), which the AdamW step writes as it updates
// them: no core rounds or keeps weights of its own.
// With S = T every call is the Ops<T> call the model made before storage types existed, on the
// same buffers: the same bits.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "ops/storage_ops.hpp"

namespace db {

template <class T>
class Backbone;

// What Backbone calls, whatever the storage type.
template <class T>
class SublayerCoresBase {
 public:
  virtual ~SublayerCoresBase() = default;
  // dx overwritten, the weights' gradients added. A core keeps its input x by pointer (S = T)
  // or as a rounded copy: the caller keeps x unchanged until the backward.
  virtual void attention_forward(Backbone<T>& net, int p, const T* x, T* y) = 0;
  virtual void attention_backward(Backbone<T>& net, int p, const T* dy, T* dx) = 0;
  virtual void ffn_forward(Backbone<T>& net, int p, const T* x, T* y) = 0;
  virtual void ffn_backward(Backbone<T>& net, int p, const T* dy, T* dx) = 0;
  // Frees what position p's cores keep for their backward (train.recompute = blocks).
  virtual void release(int p) = 0;
};

template <class T, class S>
class SublayerCores final : public SublayerCoresBase<T> {
 public:
  SublayerCores(StorageOps<T, S>& ops, int n_layer)
      : ops_(ops), attention_(n_layer), ffn_(n_layer) {}

  StorageOps<T, S>& ops() { return ops_; }

  void attention_forward(Backbone<T>& net, int p, const T* x, T* y) override;
  void attention_backward(Backbone<T>& net, int p, const T* dy, T* dx) override;
  void ffn_forward(Backbone<T>& net, int p, const T* x, T* y) override;
  void ffn_backward(Backbone<T>& net, int p, const T* dy, T* dx) override;
  void release(int p) override;

  // --- the attention core in stages, for designs that replace its softmax (MoDA) ------------
  // attention_forward = attention_project → ops().attention_forward → attention_output.
  struct AttentionCache {
    const S* x = nullptr;  // the input as S (the caller's x when S = T)
    Buffer<S> x_rounded;   // S ≠ T: the rounded input
    Buffer<S> q, k, v, o, q_pre_norm, k_pre_norm;
    Buffer<T> lse, q_rstd, k_rstd;
  };
  AttentionCache& attention_cache(int p) { return attention_[p]; }
  // Fills q, k (after QK-norm and RoPE) and v of attention_cache(p) and sizes o and lse;
  // k_unrotated (optional, [rows, H_kv·hd]) receives k after QK-norm, before RoPE.
  void attention_project(Backbone<T>& net, int p, const T* x, S* k_unrotated = nullptr);
  void attention_output(Backbone<T>& net, int p, T* y);  // y = o·W_oᵀ
  // d_o overwritten, W_o's gradient added.
  void attention_output_backward(Backbone<T>& net, int p, const T* dy, S* d_o);
  // dq, dk: gradients of the rotated q, k (consumed: used as scratch); dk_unrotated (optional):
  // a further gradient of the pre-RoPE k. dx overwritten, W_q, W_k, W_v (and QK-norm) grads added.
  void attention_project_backward(Backbone<T>& net, int p, S* dq, S* dk, const S* dv, T* dx,
                                  const S* dk_unrotated = nullptr);
  // The FFN input of position p as S (after its ffn_forward): what MoDA's depth projections read.
  const S* ffn_input(int p) const { return ffn_[p].x; }
  // Parameter id as S, for a forward or a backward: the parameter when S = T, else its bf16
  // copy (Backbone::bf16_weight; the same values for both passes, since the weights only change
  // between steps).
  const S* weight(const Backbone<T>& net, int id) const;
  // RoPE at the batch's positions on x [rows, heads, head_dim]; inverse for the backward.
  void rope(Backbone<T>& net, S* x, int heads, bool inverse);

 private:
  // QK-norm + RoPE and RoPE on q and k: fused, or separate (train.fused_kernels = off).
  void qk_norm_rope_forward(Backbone<T>& net, S* y, T* rstd, S* y_unrotated, const S* x,
                            const T* gain, int heads);
  void qk_norm_rope_backward(Backbone<T>& net, S* dx, T* dgain, S* dy, const S* dy_unrotated,
                             const S* x, const T* gain, const T* rstd, int heads);
  void rope_qk(Backbone<T>& net, S* q, S* k, bool inverse);

  struct FfnCache {
    const S* x = nullptr;
    Buffer<S> x_rounded, a, b, h;
  };
  // x as S: x itself when S = T, else rounded into keep.
  const S* storage_input(const T* x, Buffer<S>& keep, int64_t count);

  StorageOps<T, S>& ops_;
  std::vector<AttentionCache> attention_;
  std::vector<FfnCache> ffn_;
  Buffer<S> dy_, scratch_a_, scratch_b_, scratch_c_, dq_, dk_, dv_;
};

}  // namespace db
