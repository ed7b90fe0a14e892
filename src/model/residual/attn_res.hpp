// Attention Residuals (spec §9 Full, §10 Block; arXiv 2603.15031), shared by attnres_full.cpp
// (S = 1) and attnres_block.cpp. There is no running residual stream: sublayer l reads
//   h_l = Σ_i softmax_i(w_l · RMSNorm_l(v_i)) · v_i      (depth_softmax.hpp)
// over its sources, and y_l = F_l(N_l(h_l)). Sources of a consumer = [embedding, completed
// group sums..., current partial sum (only when non-empty)], groups being runs of S consecutive
// sublayers from sublayer 0 (S = 1: the raw sublayer outputs, i.e. Full AttnRes). Sublayer 0
// (block 0's attention) reads the embedding, the readout mixes every source, then final norm.
//
// Mixers and the block schedule (diagnostics.md "Skip"/"Swap"):
// - Every block owns the mixer that produces its output boundary: block j's output mixer is
//   `blocks.{j+1}.attn_res` (the input mix of block j+1's attention), the last block's is
//   `readout_res`. On a swap it travels with block j; a block's input mixer does not (it is the
//   output mixer of whatever block precedes it). `blocks.{j}.ffn_res` (mid-block) travels too.
//   Without swaps this is the plain naming of doc/parameters.md.
// - A skipped block runs neither sublayer, adds no source (nothing enters the partial sum), and
//   its output boundary "returns its newest input unchanged": the input of the next block (or
//   the readout) is the skipped block's own input mix z_p, so z_{p+1} = z_p as for a residual
//   design whose block is the identity. Group boundaries stay where their positions put them; a
//   group whose members were all skipped adds no block sum.
// Depth states: z_0 = embedding, z_p = the mix feeding block p's attention, z_L = the readout
// mix before the final norm.
// Under train.state_dtype = bf16 the sources and the mixes' gradients, once complete, are stored
// in bf16 (state_values.hpp: half the bytes of every read that follows), the gradients of the
// sublayer outputs rounded to bf16 before their core's backward (state_rounding.hpp).
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/host_device.hpp"
#include "model/residual/depth_softmax.hpp"
#include "model/residual/design.hpp"
#include "model/residual/layer_loop.hpp"
#include "model/residual/state_rounding.hpp"
#include "model/residual/state_values.hpp"
#include "model/residual/stream.hpp"
#include "ops/launch.hpp"

namespace db {

// sum = a + b out of place (a empty: 0 + b, −0 included), in the bits of Ops::axpby(a, 1, b, 1),
// the add in place into a copy of a (or a zeroed buffer) that it replaces: the partial sums (as
// stored: bf16 under train.state_dtype = bf16) and Block AttnRes's sublayers' output gradients
// (a group's and a partial sum's).
template <class T>
struct AddOutOfPlace {
  StateTarget<T> sum;
  StateValues<T> a, b;
  DB_HD void operator()(int64_t i) const { sum.store(i, (a.empty() ? T(0) : a[i]) + b[i]); }
};

template <class T>
class AttnResidual : public ResidualDesign<T>, public LayerMixing<T> {
 public:
  // group_size S: consecutive sublayers summed into one source (1 = Full AttnRes).
  AttnResidual(const ModelConfig& c, int group_size) : S_(group_size), K_(2 * c.n_layer) {
    DB_REQUIRE(S_ >= 1, "AttnRes block size must be ≥ 1");
  }

  static void declare(ParameterLayout& layout, const ModelConfig& c) {
    declare_block_norms(layout, c, {"attn_norm", "ffn_norm"});
    auto mixer = [&](const std::string& prefix) {
      layout.add_constant(prefix + "query", {c.d_model}, 0.0);  // zero: uniform at step 0
      layout.add_constant(prefix + "key_norm", {c.d_model}, 1.0);
    };
    for (int b = 0; b < c.n_layer; ++b) {
      const std::string p = "blocks." + std::to_string(b) + ".";
      if (b > 0) mixer(p + "attn_res.");  // block 0's attention reads the embedding
      mixer(p + "ffn_res.");
    }
    mixer("readout_res.");
  }

  void forward(Backbone<T>& net, const T* x0, T* features) override {
    run_layers_forward(net, *this, x0, features);
  }
  void backward(Backbone<T>& net, const T* dfeatures, T* dx0) override {
    run_layers_backward(net, *this, dfeatures, dx0);
  }

  // --- the steps of the layer loop (layer_loop.hpp) ---------------------------------------
  void begin_forward(Backbone<T>& net, const T* x0) override {
    const int64_t count = net.rows() * net.d();
    emb_.assign(net.ops().space(), x0, count, net.bf16_state());
    mixes_.assign(K_ + 1, Mix{});
    ran_.assign(K_, false);
    group_end_.assign((K_ + S_ - 1) / S_, -1);
    partials_.assign(K_, {});
    pre_norm_.resize(K_);
    u_.resize(K_);
    y_.resize(count);
    saved_.resize(net.n_layer());
    partial_at_ = -1;
  }

  // z_l, the input mix of block l's attention (consumer 2l; l = L: the readout's, consumer K).
  DepthState<T> depth_state(Backbone<T>& net, int l) override {
    const int c = 2 * l;
    if (l == 0) {
      mixes_[c].kind = Mix::kEmbedding;
      mixes_[c].h.resize(net.rows() * net.d());
      emb_.widen_into(net.ops().space(), mixes_[c].h.data(), net.rows() * net.d());
    } else if (net.skipped(l - 1)) {
      copy_boundary(c, c - 2);
    } else {
      mix(net, c, output_mixer(net, l - 1));
    }
    return {mixes_[c].h.data(), net.d()};
  }

  // A skipped block adds no source; the groups its positions end still close.
  void skip_forward(Backbone<T>&, int p) override {
    close_group(2 * p);
    close_group(2 * p + 1);
  }

  SublayerIO<T> sublayer_forward(Backbone<T>& net, int p, bool ffn) override {
    const int k = 2 * p + ffn;
    if (ffn) mix(net, k, net.block_param(p, "ffn_res.query"));
    ran_[k] = true;
    const int gain = net.block_param(p, ffn ? "ffn_norm" : "attn_norm");
    Buffer<T>& u = u_[k];  // the core's input, kept for its backward
    u.resize(net.rows() * net.d());
    net.rmsnorm_forward(gain, mixes_[k].h.data(), u.data(), pre_norm_[k], net.rows(), net.d());
    if (ffn)
      net.ffn_forward(p, u.data(), y_.data());
    else
      net.attention_forward(p, u.data(), y_.data());
    return {u.data(), y_.data()};
  }

  // The raw output joins the partial sum, written out of place as sublayer k's partial sum (the
  // buffer the mixes that read it and the group sum refer to); at the end of a group the partial
  // becomes a block sum.
  void sublayer_merge(Backbone<T>& net, int p, bool ffn) override {
    const int k = 2 * p + ffn;
    const int64_t count = net.rows() * net.d();
    partials_[k].resize(count, net.bf16_state());
    const StateValues<T> previous =
        partial_at_ >= 0 ? partials_[partial_at_].values() : StateValues<T>{};
    for_each_index(net.ops().space(), count,
                   AddOutOfPlace<T>{partials_[k].target(), previous, y_.data()});
    partial_at_ = k;
    close_group(k);
  }

  void readout_forward(Backbone<T>& net, T* features) override {
    net.rmsnorm_forward(net.layout().id("final_norm"), mixes_[K_].h.data(), features, final_norm_,
                        net.rows(), net.d());
  }

  void readout_backward(Backbone<T>& net, const T* dfeatures) override {
    const int64_t count = net.rows() * net.d();
    const int groups = (K_ + S_ - 1) / S_;
    // Gathered (train.fused_kernels): the embedding's and a group's gradient are collected from
    // their consumers when needed, the group's into one buffer (gathered_group_).
    const bool gather = gathers(net);
    demb_.assign_zeros(gather ? 0 : count);
    zeroed(dh_, K_ + 1, count);
    dh_narrow_.resize(K_ + 1);
    zeroed(dgroup_, gather ? 0 : groups, count);
    gathered_group_ = -1;
    zeroed(dpartial_, S_ > 1 ? groups : 0, count);
    net.rmsnorm_backward(net.layout().id("final_norm"), dfeatures, dh_[K_].data(), final_norm_,
                         net.rows(), net.d());
  }

  void depth_state_backward(Backbone<T>& net, int l) override { consumer_backward(net, 2 * l); }

  void sublayer_backward(Backbone<T>& net, int p, bool ffn) override {
    const int k = 2 * p + ffn, g = k / S_;
    const int64_t count = net.rows() * net.d();
    // y_k reaches later consumers through its group's sum and through partial sums (Block
    // AttnRes); in groups of one (Full AttnRes) the group's gradient is y_k's, read where it is.
    T* dgroup = group_gradient(net, g);
    T* dy = dgroup;
    if (!dpartial_.empty()) {
      dy_.resize(count);
      for_each_index(net.ops().space(), count,
                     AddOutOfPlace<T>{dy_.data(), dgroup, dpartial_[g].data()});
      dy = dy_.data();
    }
    round_state(net, dy, count);
    du_.resize(count);
    if (ffn)
      net.ffn_backward(p, dy, du_.data());
    else
      net.attention_backward(p, dy, du_.data());
    const int gain = net.block_param(p, ffn ? "ffn_norm" : "attn_norm");
    net.rmsnorm_backward(gain, du_.data(), dh_[k].data(), pre_norm_[k], net.rows(), net.d(),
                         /*accumulate_dx=*/true);
    if (ffn) consumer_backward(net, k);  // the FFN's input mix, computed in sublayer_forward
  }

  void end_backward(Backbone<T>& net, T* dx0) override {
    if (gathers(net))
      gather_source(net, {Ref::kEmbedding, -1}, emb_.values(), dx0);
    else
      net.ops().copy(dx0, demb_.data(), net.rows() * net.d());
    dh_narrow_.clear();  // read by the gathers only: not kept into the next forward
  }

  // train.recompute = blocks. Block p reads its input mix z_p (consumer 2p, computed before the
  // block and kept with its weights for depth_state_backward) and the sources: the embedding and
  // group sums (kept) and the running partial sum, whose position is saved here (the partial sum
  // of the FFN of the last block run before p, kept: release_block frees an attention's only).
  // Its re-run writes the same group sums and partial sums again.
  void save_block_input(Backbone<T>&, int p) override { saved_[p] = partial_at_; }
  void restore_block_input(Backbone<T>&, int p) override { partial_at_ = saved_[p]; }
  // Frees the sublayers' core inputs and norm statistics, the FFN's input mix (consumer 2p + 1;
  // its softmax weights, rows × sources values, stay for the gathered backward, which reads them
  // after this block's) and the attention's partial sum, which only that mix and the FFN's
  // partial sum read, unless it is a group sum; the re-run computes them again.
  void release_block(Backbone<T>&, int p) override {
    for (int k : {2 * p, 2 * p + 1}) {
      u_[k] = {};
      pre_norm_[k].release();
    }
    if ((2 * p + 1) % S_ != 0) partials_[2 * p] = {};
    Mix& ffn_mix = mixes_[2 * p + 1];
    for (Buffer<T>* b : {&ffn_mix.h, &ffn_mix.rstd}) *b = {};
  }

  // [sources × consumers] as ResidualDesign documents: the depth-softmax weight each consumer
  // puts on each source, averaged over tokens. A group sum (or partial sum) carries each of its
  // sublayer outputs with the group's weight, so every member's row shows the weight of the
  // aggregate containing it; for Block AttnRes the weight a consumer c gives the partial sum is
  // the entry of source c − 1 when c − 1 is in c's group (the dead-segment diagnostic). A
  // consumer that reads the embedding directly (sublayer 0) has weight 1 on it; a boundary that
  // passes a skipped block's input on shows that input's weights. NaN: source not earlier, or a
  // skipped sublayer (as source or consumer).
  std::vector<double> path_weights(const Backbone<T>&) const override {
    const int consumers = K_ + 1;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> w(size_t(K_ + 1) * consumers, nan);
    auto at = [&](int src, int c) -> double& { return w[size_t(src) * consumers + c]; };
    for (int c = 0; c <= K_; ++c) {
      const Mix& m = mixes_[c];
      if (m.kind == Mix::kEmbedding) {
        at(0, c) = 1.0;
      } else if (m.kind == Mix::kCopy) {
        for (int s = 0; s <= K_; ++s) at(s, c) = at(s, m.copy_of);
      } else if (m.kind == Mix::kMix) {
        const int sources = int(m.refs.size());
        const int64_t rows = int64_t(m.weights.size()) / sources;
        const std::vector<T> weights = m.weights.to_host();
        for (int i = 0; i < sources; ++i) {
          double mean = 0;
          for (int64_t r = 0; r < rows; ++r) mean += weights[r * sources + i];
          mean /= double(rows);
          const Ref& ref = m.refs[i];
          if (ref.kind == Ref::kEmbedding) {
            at(0, c) = mean;
            continue;
          }
          for (int j = ref.group * S_; j < std::min(K_, (ref.group + 1) * S_); ++j)
            if (ran_[j] && j < c) at(1 + j, c) = mean;
        }
      }
    }
    for (int c = 0; c < K_; ++c)
      if (!ran_[c])
        for (int s = 0; s <= K_; ++s) at(s, c) = nan;
    for (int s = 0; s < K_; ++s)
      if (!ran_[s])
        for (int c = 0; c <= K_; ++c) at(1 + s, c) = nan;
    return w;
  }

  // Block AttnRes dead segment: the weight consumer c gives the running partial sum, which
  // exists when c − 1 is in c's group (c % S ≠ 0); NaN otherwise. Full AttnRes has none.
  std::vector<double> partial_sum_weights(const Backbone<T>& net) const override {
    if (S_ == 1) return {};
    const std::vector<double> w = path_weights(net);
    std::vector<double> ps(K_, std::numeric_limits<double>::quiet_NaN());
    for (int c = 1; c < K_; ++c)
      if (c % S_ != 0) ps[c] = w[size_t(c) * (K_ + 1) + c];  // source 1 + (c − 1)
    return ps;
  }

 private:
  struct Ref {
    enum Kind { kEmbedding, kGroup, kPartial } kind;
    int group;  // position group (sublayer / S) of a group or partial sum
  };
  struct Mix {
    enum Kind { kNone, kEmbedding, kCopy, kMix } kind = kNone;
    int copy_of = -1;
    int query = -1, key_norm = -1;
    std::vector<Ref> refs;
    int partial_of = -1;  // the sublayer whose partial sum (partials_) this mix read
    Buffer<T> h, weights, rstd;
    // Gathered backward: dlogit_i per token and source, which the sources' gathers read with the
    // weights after this mix's backward.
    Buffer<T> dlogits;
  };

  // The gathered backward (train.fused_kernels, rows that fit a lane's registers).
  static bool gathers(const Backbone<T>& net) {
    return net.fused_kernels() && depth_softmax_gathers<T>(net.d());
  }

  // Query id of the mixer that produces the output boundary of the block at position p.
  int output_mixer(const Backbone<T>& net, int p) const {
    const int j = net.param_block(p);
    if (j + 1 < net.n_layer())
      return net.layout().id("blocks." + std::to_string(j + 1) + ".attn_res.query");
    return net.layout().id("readout_res.query");
  }

  // `count` buffers of `size` zeros.
  static void zeroed(std::vector<Buffer<T>>& buffers, int count, int64_t size) {
    buffers.resize(count);
    for (Buffer<T>& b : buffers) b.assign_zeros(size);
  }

  void copy_boundary(int c, int from) {
    mixes_[c].kind = Mix::kCopy;
    mixes_[c].copy_of = from;
    mixes_[c].h = mixes_[from].h;
  }

  bool group_closed(int g) const { return group_end_[g] >= 0; }
  StateValues<T> group_value(int g) const { return partials_[group_end_[g]].values(); }

  StateValues<T> source_value(const Mix& m, const Ref& r) const {
    if (r.kind == Ref::kEmbedding) return emb_.values();
    if (r.kind == Ref::kGroup) return group_value(r.group);
    return partials_[m.partial_of].values();
  }

  // The depth-softmax mix of consumer c over the current sources; query_id names the mixer
  // (its key norm is the parameter declared right after the query).
  void mix(Backbone<T>& net, int c, int query_id) {
    Mix& m = mixes_[c];
    m.kind = Mix::kMix;
    m.query = query_id;
    const std::string& qname = net.layout().spec(query_id).name;
    m.key_norm = net.layout().id(qname.substr(0, qname.size() - 5) + "key_norm");
    m.refs = {{Ref::kEmbedding, -1}};
    // The groups closed before consumer c (a re-run under train.recompute sees later ones too).
    for (int g = 0; g < int(group_end_.size()) && (g + 1) * S_ <= c; ++g)
      if (group_closed(g)) m.refs.push_back({Ref::kGroup, g});
    if (partial_at_ >= 0) {
      m.refs.push_back({Ref::kPartial, c / S_});
      m.partial_of = partial_at_;
    }
    const int sources = int(m.refs.size());
    std::vector<StateValues<T>> values(sources);
    for (int i = 0; i < sources; ++i) values[i] = source_value(m, m.refs[i]);
    const int64_t rows = net.rows();
    m.h.resize(rows * net.d());
    m.weights.resize(rows * sources);
    m.rstd.resize(rows * sources);
    depth_softmax_forward(net.ops().space(), net.fused_kernels(), m.h.data(), m.weights.data(),
                          m.rstd.data(), values, net.value(m.query), net.value(m.key_norm),
                          {rows, net.d(), sources, net.config().norm_eps});
  }

  // After sublayer k (run or skipped): at the end of a group the partial becomes a block sum,
  // the same buffer (a mix before a skipped group end may read it as its partial sum too).
  void close_group(int k) {
    if ((k + 1) % S_ != 0) return;
    if (partial_at_ >= 0) group_end_[k / S_] = partial_at_;
    partial_at_ = -1;
  }

  // Group g's gradient, the sum over the consumers of its group sum: kept from their scatters,
  // or gathered once, at its last member's backward. A last group shorter than S never closes
  // (no sum, no consumers): its members reach later consumers through partial sums only.
  T* group_gradient(Backbone<T>& net, int g) {
    if (!gathers(net)) return dgroup_[g].data();
    if (gathered_group_ != g) {
      const int64_t count = net.rows() * net.d();
      if (!group_closed(g)) {
        dgroup_gathered_.assign_zeros(count);
      } else {
        dgroup_gathered_.resize(count);
        gather_source(net, {Ref::kGroup, g}, group_value(g), dgroup_gathered_.data());
      }
      gathered_group_ = g;
    }
    return dgroup_gathered_.data();
  }

  // dv (written) of the embedding or a group sum v from every consumer that read it, in the
  // order the two-pass backward adds them (the last consumer first). Sublayer 0 reads the
  // embedding itself; a skipped block's boundary passed its dh on to the boundary it copies.
  void gather_source(Backbone<T>& net, Ref source, StateValues<T> v, T* dv) {
    std::vector<DepthGatherTerm<T>> consumers;
    for (int c = K_; c >= 0; --c) {
      const Mix& m = mixes_[c];
      if (m.kind == Mix::kEmbedding && source.kind == Ref::kEmbedding)
        consumers.push_back({settled_gradient(net, c), nullptr, nullptr, nullptr, nullptr, 0});
      if (m.kind != Mix::kMix) continue;
      const int sources = int(m.refs.size());
      for (int i = 0; i < sources; ++i)
        if (m.refs[i].kind == source.kind && m.refs[i].group == source.group)
          consumers.push_back({settled_gradient(net, c), m.weights.data() + i, m.dlogits.data() + i,
                               net.value(m.query), net.value(m.key_norm), sources});
    }
    depth_softmax_gather(net.ops().space(), dv, v, consumers, net.rows(), net.d(),
                         net.config().norm_eps);
  }

  // Consumer c's gradient dh, complete when its backward starts, as its sources' backward reads
  // it: under train.state_dtype = bf16 stored in bf16 (dh_narrow_: half the bytes of each
  // gather's read) and its T buffer freed; else dh_[c] itself.
  StateValues<T> settle_gradient(Backbone<T>& net, int c) {
    if (!net.bf16_state()) return dh_[c].data();
    dh_narrow_[c].assign(net.ops().space(), dh_[c].data(), net.rows() * net.d(), true);
    dh_[c] = {};
    return dh_narrow_[c].values();
  }
  StateValues<T> settled_gradient(const Backbone<T>& net, int c) const {
    return net.bf16_state() ? dh_narrow_[c].values() : StateValues<T>(dh_[c].data());
  }

  void consumer_backward(Backbone<T>& net, int c) {
    Mix& m = mixes_[c];
    const int64_t count = net.rows() * net.d();
    if (m.kind == Mix::kCopy) {  // a copied boundary's gradient joins the one it copies
      add_into(net.ops(), dh_[m.copy_of].data(), dh_[c].data(), count);
      return;
    }
    if (m.kind == Mix::kNone) return;
    const StateValues<T> dh = settle_gradient(net, c);
    if (m.kind == Mix::kEmbedding) {
      if (gathers(net)) return;  // the embedding's gather reads dh
      for_each_index(net.ops().space(), count, AddOutOfPlace<T>{demb_.data(), demb_.data(), dh});
    } else if (m.kind == Mix::kMix) {
      const int sources = int(m.refs.size());
      const bool gather = gathers(net);
      std::vector<StateValues<T>> values(sources);
      std::vector<T*> grads(sources);
      for (int i = 0; i < sources; ++i) {
        const Ref& r = m.refs[i];
        values[i] = source_value(m, r);
        // Gathered, the partial sum (this consumer's own snapshot) still gets its share here.
        grads[i] = r.kind == Ref::kPartial     ? dpartial_[r.group].data()
                   : gather                    ? nullptr
                   : r.kind == Ref::kEmbedding ? demb_.data()
                                               : dgroup_[r.group].data();
      }
      const DepthMixShape shape{net.rows(), net.d(), sources, net.config().norm_eps};
      if (gather) {
        m.dlogits.resize(net.rows() * sources);
        depth_softmax_consumer_backward(net.ops().space(), grads, m.dlogits.data(),
                                        net.grad(m.query), net.grad(m.key_norm), dh, m.h.data(),
                                        values, m.weights.data(), m.rstd.data(), net.value(m.query),
                                        net.value(m.key_norm), shape);
      } else {
        depth_softmax_backward(net.ops().space(), grads, net.grad(m.query), net.grad(m.key_norm),
                               dh, values, m.weights.data(), m.rstd.data(), net.value(m.query),
                               net.value(m.key_norm), shape);
      }
    }
  }

  const int S_, K_;
  std::vector<Mix> mixes_;  // consumers 0..2L−1 (sublayer inputs), 2L = readout
  std::vector<bool> ran_;
  // By sublayer: the partial sum of its group up to and including it (empty: skipped, or freed
  // under train.recompute). A group's sum is the partial sum of its last member that ran.
  std::vector<StateBuffer<T>> partials_;
  std::vector<int> group_end_;  // by position group: that member, −1 if none ran
  int partial_at_ = -1;         // the running partial sum's sublayer, −1 while empty

  StateBuffer<T> emb_;
  Buffer<T> y_, dy_, du_, demb_;
  std::vector<Buffer<T>> u_;  // by sublayer: the core's input, kept for its backward
  // By position: block p's running partial sum (partial_at_) for its train.recompute re-run.
  std::vector<int> saved_;
  std::vector<NormCache<T>> pre_norm_;
  NormCache<T> final_norm_;
  std::vector<Buffer<T>> dh_, dgroup_, dpartial_;
  std::vector<StateBuffer<T>> dh_narrow_;  // by consumer, under train.state_dtype = bf16
  Buffer<T> dgroup_gathered_;  // the gradient of group gathered_group_ (gathered backward)
  int gathered_group_ = -1;
};

}  // namespace db
