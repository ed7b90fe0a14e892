// §6 MoDA — Mixture-of-Depths Attention (arXiv 2603.15619; not token-routing MoD).
// A Pre-LN stream whose attention in block l also attends, for the same token t, to "depth"
// key/value entries of every earlier block m < l under one joint softmax with the causal
// sequence keys (Ops::moda_attention_forward):
//   slot 2m:   block m's own attention k (after QK-norm, before RoPE unless
//              `moda_rope_depth_keys`) and v at position t;
//   slot 2m+1: moda_wk_ffn_m·u_m(t), moda_wv_ffn_m·u_m(t), u_m = block m's normalised FFN input
//              (the output of ffn_norm; with `moda_post_norm` the FFN input h).
// Block l reads slots 0..2l−1; the last block's FFN slot is never read, so its projections do
// not exist. `moda_post_norm`: h = N_a(x + MoDAAttn(x)), x' = N_f(h + FFN(h)).
// Depth slots are position-bound (diagnostics.md "Swap"): a skipped block writes nothing and
// its slots stay zero — they still take part in the softmax with logit 0 and value 0, which is
// exactly what a block whose K/V projections are zero would write. On a swap the FFN
// projection travels with the block when both blocks have one; the last block's parameters
// at an earlier position use that position's own projection (it has no counterpart to swap).
#include <algorithm>
#include <memory>
#include <type_traits>

#include "core/bfloat16.hpp"
#include "model/residual/design.hpp"
#include "model/residual/stream.hpp"
#include "model/residual/sublayer.hpp"

namespace db {
namespace {

// The depth slots and the attention that reads them, on the storage type S of the backbone's
// sublayer cores (T, or bf16 under train.activation_dtype = bf16).
template <class T>
struct ModaDepthBase : SublayerCore<T> {
  virtual void begin_forward(Backbone<T>& net) = 0;
  virtual void begin_backward() = 0;
};

template <class T, class S>
class ModaDepth final : public ModaDepthBase<T> {
 public:
  ModaDepth(const ModelConfig& c, SublayerCores<T, S>& cores)
      : cores_(cores),
        ops_(cores.ops()),
        n_layer_(c.n_layer),
        slots_(std::max(2 * (c.n_layer - 1), 1)),
        rope_depth_keys_(c.option("moda_rope_depth_keys", false)),
        ffn_input_(c.n_layer) {}

  // Depth slots are filled by the forward; a skipped block's slots stay zero.
  void begin_forward(Backbone<T>& net) override {
    const int64_t size = net.rows() * slots_ * kv_width(net);
    depth_k_.assign_zeros(size);
    depth_v_.assign_zeros(size);
  }
  void begin_backward() override {
    d_depth_k_.assign_zeros(depth_k_.size());
    d_depth_v_.assign_zeros(depth_v_.size());
  }

  void forward(Backbone<T>& net, int p, bool ffn, const T* u, T* y) override {
    const int64_t N = net.rows();
    const int kvw = kv_width(net);
    const bool writes = p < n_layer_ - 1;  // the last block's entries are never read
    if (ffn) {
      net.ffn_forward(p, u, y);
      if (!writes) return;
      ffn_input_[p] = cores_.ffn_input(p);  // kept by the cores (or the stack) until the backward
      tmp_k_.resize(N * kvw);
      tmp_v_.resize(N * kvw);
      const int wk = ffn_projection(net, p, "moda_wk_ffn"),
                wv = ffn_projection(net, p, "moda_wv_ffn");
      ops_.linear_forward(tmp_k_.data(), ffn_input_[p], cores_.weight(net, wk), N, net.d(), kvw);
      ops_.linear_forward(tmp_v_.data(), ffn_input_[p], cores_.weight(net, wv), N, net.d(), kvw);
      if (rope_depth_keys_)  // rotated at the token's own position
        cores_.rope(net, tmp_k_.data(), net.config().kv_heads(), false);
      scatter(net, depth_k_, tmp_k_, 2 * p + 1);
      scatter(net, depth_v_, tmp_v_, 2 * p + 1);
      return;
    }
    auto& a = cores_.attention_cache(p);
    tmp_k_.resize(N * kvw);
    cores_.attention_project(net, p, u, rope_depth_keys_ ? nullptr : tmp_k_.data());
    ops_.moda_attention_forward(a.o.data(), a.lse.data(), a.q.data(), a.k.data(), a.v.data(),
                                depth_k_.data(), depth_v_.data(), shape(net, p));
    cores_.attention_output(net, p, y);
    if (!writes) return;
    scatter(net, depth_k_, rope_depth_keys_ ? a.k : tmp_k_, 2 * p);
    scatter(net, depth_v_, a.v, 2 * p);
  }

  void backward(Backbone<T>& net, int p, bool ffn, const T* dy, T* du) override {
    const int64_t N = net.rows();
    const int kvw = kv_width(net);
    const bool writes = p < n_layer_ - 1;
    if (ffn) {
      net.ffn_backward(p, dy, du);
      if (!writes) return;  // the FFN slot's gradient is complete: its readers ran backward
      gather(net, tmp_k_, d_depth_k_, 2 * p + 1);
      gather(net, tmp_v_, d_depth_v_, 2 * p + 1);
      if (rope_depth_keys_) cores_.rope(net, tmp_k_.data(), net.config().kv_heads(), true);
      const int wk = ffn_projection(net, p, "moda_wk_ffn"),
                wv = ffn_projection(net, p, "moda_wv_ffn");
      const S* x = ffn_input_[p];
      ops_.linear_backward_wide(du, net.grad(wk), tmp_k_.data(), x, cores_.weight(net, wk), N,
                                net.d(), kvw, true);
      ops_.linear_backward_wide(du, net.grad(wv), tmp_v_.data(), x, cores_.weight(net, wv), N,
                                net.d(), kvw, true);
      return;
    }
    const ModelConfig& c = net.config();
    auto& a = cores_.attention_cache(p);
    d_o_.resize(N * c.n_head * c.head_dim());
    dq_.resize(N * c.n_head * c.head_dim());
    dk_.resize(N * kvw);
    dv_.resize(N * kvw);
    cores_.attention_output_backward(net, p, dy, d_o_.data());
    ops_.moda_attention_backward(dq_.data(), dk_.data(), dv_.data(), d_depth_k_.data(),
                                 d_depth_v_.data(), d_o_.data(), a.o.data(), a.lse.data(),
                                 a.q.data(), a.k.data(), a.v.data(), depth_k_.data(),
                                 depth_v_.data(), shape(net, p));
    const S* dk_unrotated = nullptr;
    if (writes) {  // this block's own k and v also served as depth entries of later blocks
      gather(net, tmp_k_, d_depth_k_, 2 * p);
      gather(net, tmp_v_, d_depth_v_, 2 * p);
      ops_.axpby(dv_.data(), T(1), tmp_v_.data(), T(1), N * kvw);
      if (rope_depth_keys_)
        ops_.axpby(dk_.data(), T(1), tmp_k_.data(), T(1), N * kvw);
      else
        dk_unrotated = tmp_k_.data();
    }
    cores_.attention_project_backward(net, p, dq_.data(), dk_.data(), dv_.data(), du, dk_unrotated);
  }

 private:
  static int kv_width(const Backbone<T>& net) {
    return net.config().kv_heads() * net.config().head_dim();
  }

  // Block p reads the 2p slots of the blocks before it.
  ModaShape shape(const Backbone<T>& net, int p) const {
    const ModelConfig& c = net.config();
    return {net.batch(), net.seq_len(), c.n_head, c.kv_heads(), c.head_dim(), 2 * p, slots_};
  }

  // The FFN depth projection at position p < L−1: the running block's own when it has one,
  // else (the last block's parameters swapped to p) position p's, which stays in place.
  static int ffn_projection(const Backbone<T>& net, int p, const std::string& name) {
    const std::string own = "blocks." + std::to_string(net.param_block(p)) + "." + name;
    if (net.layout().has(own)) return net.layout().id(own);
    return net.layout().id("blocks." + std::to_string(p) + "." + name);
  }

  // Copies a [rows, kvw] tensor into / out of one slot of a [rows, slots, kvw] pool.
  void scatter(Backbone<T>& net, Buffer<S>& pool, const Buffer<S>& x, int slot) {
    const int kvw = kv_width(net);
    ops_.copy_rows(pool.data() + slot * kvw, int64_t(slots_) * kvw, x.data(), kvw, net.rows(), kvw);
  }
  void gather(Backbone<T>& net, Buffer<S>& x, const Buffer<S>& pool, int slot) {
    const int kvw = kv_width(net);
    x.resize(net.rows() * kvw);
    ops_.copy_rows(x.data(), kvw, pool.data() + slot * kvw, int64_t(slots_) * kvw, net.rows(), kvw);
  }

  SublayerCores<T, S>& cores_;
  StorageOps<T, S>& ops_;
  int n_layer_, slots_;
  bool rope_depth_keys_;
  Buffer<S> depth_k_, depth_v_, d_depth_k_, d_depth_v_;  // [rows, slots, H_kv·hd]
  std::vector<const S*> ffn_input_;                      // u_p as S, for the projections' grads
  Buffer<S> tmp_k_, tmp_v_, d_o_, dq_, dk_, dv_;
};

// MoDA's core: the depth attention on the storage type of the backbone it first runs on.
template <class T>
class ModaCore final : public SublayerCore<T> {
 public:
  explicit ModaCore(const ModelConfig& c) : config_(c) {}

  void begin_forward(Backbone<T>& net) {
    if (!depth_) depth_ = make_depth(net);
    depth_->begin_forward(net);
  }
  void begin_backward() { depth_->begin_backward(); }
  void forward(Backbone<T>& net, int p, bool ffn, const T* u, T* y) override {
    depth_->forward(net, p, ffn, u, y);
  }
  void backward(Backbone<T>& net, int p, bool ffn, const T* dy, T* du) override {
    depth_->backward(net, p, ffn, dy, du);
  }

 private:
  std::unique_ptr<ModaDepthBase<T>> make_depth(Backbone<T>& net) {
    if constexpr (std::is_same_v<T, float>)
      if (net.bf16_storage())
        return std::make_unique<ModaDepth<T, bfloat16>>(config_, net.template cores<bfloat16>());
    return std::make_unique<ModaDepth<T, T>>(config_, net.template cores<T>());
  }

  ModelConfig config_;
  std::unique_ptr<ModaDepthBase<T>> depth_;
};

template <class T>
class Moda : public ResidualDesign<T> {
 public:
  explicit Moda(const ModelConfig& c)
      : core_(c),
        stack_(
            c,
            [post = c.option("moda_post_norm", false)](const Backbone<T>&, int, bool ffn) {
              SublayerForm f;
              (post ? f.out_norm : f.in_norm) = ffn ? "ffn_norm" : "attn_norm";
              return f;
            },
            &core_) {}

  static void declare(ParameterLayout& layout, const ModelConfig& c) {
    declare_block_norms(layout, c, {"attn_norm", "ffn_norm"});
    const int64_t kv_width = int64_t(c.kv_heads()) * c.head_dim();
    for (int b = 0; b + 1 < c.n_layer; ++b) {  // the last block's FFN entries are never read
      layout.add_matrix("blocks." + std::to_string(b) + ".moda_wk_ffn", {kv_width, c.d_model},
                        c.init_std);
      layout.add_matrix("blocks." + std::to_string(b) + ".moda_wv_ffn", {kv_width, c.d_model},
                        c.init_std);
    }
  }

  // Depth attention beyond 6N + 12·L·d·T (doc/designs.md): block l's queries read 2l depth
  // entries, 2·2l·hd FLOPs per head for the logits and as many for the weighted sum, forward;
  // ×3 for training: 12·H·hd·Σ_l 2l = 12·H·hd·L(L−1). The FFN K/V projections are in 6N.
  static double extra_flops_per_token(const ModelConfig& c, int /*seq_len*/) {
    return 12.0 * c.n_head * c.head_dim() * double(c.n_layer) * (c.n_layer - 1);
  }

  void forward(Backbone<T>& net, const T* x0, T* features) override {
    core_.begin_forward(net);
    run_layers_forward(net, stack_, x0, features);
  }
  void backward(Backbone<T>& net, const T* dfeatures, T* dx0) override {
    core_.begin_backward();
    run_layers_backward(net, stack_, dfeatures, dx0);
  }

 private:
  ModaCore<T> core_;  // before stack_, which runs it
  SublayerStack<T> stack_;
};

}  // namespace

DesignInfo moda_design() {
  return make_design_info<Moda>(
      {.name = "moda",
       .title = "MoDA",
       .summary = "MoDA: Pre-LN with same-token depth keys/values in the attention softmax",
       .section = 6,
       .options = {{"moda_rope_depth_keys", "false",
                    "rotate depth keys with RoPE (default: cached pre-RoPE)",
                    OptionValues::boolean()},
                   {"moda_post_norm", "false", "post-norm variant h = N(x + MoDAAttn(x))",
                    OptionValues::boolean()}},
       // The depth keys and values of every block and their gradients.
       .state_values_per_token_block =
           [](const ModelConfig& c) { return 4.0 * c.kv_heads() * c.head_dim(); },
       // Under train.recompute = blocks: the stream a block reads and its depth entries.
       .recompute_values_per_token_block =
           [](const ModelConfig& c) { return c.d_model + 4.0 * c.kv_heads() * c.head_dim(); },
       // The depth pools are kept in the cores' activation type (bf16 under bf16 storage).
       .stored_values_per_token_block =
           [](const ModelConfig& c) { return 4.0 * c.kv_heads() * c.head_dim(); }});
}

}  // namespace db
