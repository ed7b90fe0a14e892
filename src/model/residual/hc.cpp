// §7 HC — dynamic Hyper-Connections with tanh (arXiv 2409.19606).
// State per token H ∈ R^{n×d} (n streams, stored [rows, n, d]); H_0 = n copies of the embedding.
// Sublayer k:  Hn = RMSNorm_k(H) per stream;
//   α = [a_k | A_k] + s_α·tanh(Hn W_α)  (n×(n+1)),   β = b_k + s_β·tanh(Hn W_β)  (n);
//   x_in = Σ_s α[s,0]·H[s];  y = F_k(N_k(x_in));  H'[j] = Σ_s α[s,j+1]·H[s] + β[j]·y.
// Readout (config hc_readout): norm_then_sum = Σ_s N_final(H[s]) (authors' code, default) or
// sum_then_norm = N_final(Σ_s H[s]) (HC paper). Names and layouts: doc/parameters.md.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/error.hpp"
#include "model/residual/design.hpp"
#include "model/residual/normed_product.hpp"
#include "model/residual/stream.hpp"
#include "model/residual/stream_kernels.hpp"
#include "model/residual/stream_mixing.hpp"
#include "model/residual/stream_readout.hpp"

namespace db {
namespace {

std::string block_name(int b, const std::string& suffix) {
  return "blocks." + std::to_string(b) + "." + suffix;
}

int hc_streams(const ModelConfig& c) {
  const int n = int(c.option("hc_streams", 4.0));
  DB_REQUIRE(n >= 1, "hc_streams must be ≥ 1");
  return n;
}

bool hc_sum_then_norm(const ModelConfig& c) {
  const std::string r = c.option("hc_readout", std::string("norm_then_sum"));
  DB_REQUIRE(r == "norm_then_sum" || r == "sum_then_norm",
             "hc_readout must be norm_then_sum or sum_then_norm, not '" + r + "'");
  return r == "sum_then_norm";
}

// One (token, stream) row of the routing coefficients (§7): t [rows·n, n+2] holds the logits
// z = Hn·[W_α | W_β] on entry and tanh(z) on exit; α = static_alpha + s_α·tanh(z_α) (n+1 values),
// β = static_beta + s_β·tanh(z_β). The static values are those of the row's stream s.
template <class T>
struct HcCoefficients {
  T *alpha, *beta, *t;
  const T *static_alpha, *static_beta, *s_alpha, *s_beta;
  int n;
  DB_HD void operator()(int64_t rs) const {
    using std::tanh;
    const int n1 = n + 1, s = int(rs % n);
    T* tr = t + rs * (n + 2);
    for (int c = 0; c < n1; ++c) {
      tr[c] = tanh(tr[c]);
      alpha[rs * n1 + c] = static_alpha[s * n1 + c] + *s_alpha * tr[c];
    }
    tr[n1] = tanh(tr[n1]);
    beta[rs] = static_beta[s] + *s_beta * tr[n1];
  }
};

// One token of the coefficients' backward (t = tanh(z) [rows·n, n+2] kept by the forward): the
// logit gradients dz = dcoef·s·(1 − t²) into dz [rows·n, n+2], and into the row sums the
// gradients of static_alpha [n(n+1)], static_beta [n], s_α, s_β (dcoef and dcoef·t).
template <class T>
struct HcCoefficientGrads {
  T* dz;
  const T *dalpha, *dbeta, *t, *s_alpha, *s_beta;
  int n;
  DB_HD void operator()(int64_t r, double* sums) const {
    const int n1 = n + 1, m = n + 2, na = n * n1;
    double* ds_alpha = sums + na + n;
    double* ds_beta = ds_alpha + 1;
    for (int s = 0; s < n; ++s)
      for (int c = 0; c < n1; ++c) {
        const int64_t rs = r * n + s, i = rs * n1 + c;
        const T tc = t[rs * m + c];
        sums[s * n1 + c] += dalpha[i];
        *ds_alpha += double(dalpha[i]) * tc;
        dz[rs * m + c] = dalpha[i] * *s_alpha * (T(1) - tc * tc);
      }
    for (int s = 0; s < n; ++s) {
      const int64_t rs = r * n + s;
      const T tb = t[rs * m + n1];
      sums[na + s] += dbeta[rs];
      *ds_beta += double(dbeta[rs]) * tb;
      dz[rs * m + n1] = dbeta[rs] * *s_beta * (T(1) - tb * tb);
    }
  }
};

template <class T>
class HyperConnections : public ResidualDesign<T>,
                         public MultiStream<T>,
                         public StreamMixingSource {
 public:
  explicit HyperConnections(const ModelConfig& c)
      : MultiStream<T>(
            c, hc_streams(c), /*norm_streams=*/1,
            hc_sum_then_norm(c) ? StreamReadout::sum_then_norm : StreamReadout::norm_then_sum),
        subs_(2 * c.n_layer) {}

  static void declare(ParameterLayout& layout, const ModelConfig& c) {
    const int n = hc_streams(c);
    hc_sum_then_norm(c);  // validates the option
    declare_block_norms(layout, c, {"attn_norm", "ffn_norm"});
    const int64_t d = c.d_model;
    for (int b = 0; b < c.n_layer; ++b) {
      // §7: W_o and W2 start with std 0.02/sqrt(n) (so the n-fold readout keeps its scale).
      layout.set_init_std(block_name(b, "wo"), c.init_std / std::sqrt(double(n)));
      layout.set_init_std(block_name(b, "w2"), c.init_std / std::sqrt(double(n)));
      for (int ffn = 0; ffn < 2; ++ffn) {
        const int k = 2 * b + ffn;
        const std::string s = block_name(b, ffn ? "ffn_hc." : "attn_hc.");
        // [a_k | A_k] with a_k = e_{k mod n}, A_k = I. No weight decay: hc_design()'s no_decay.
        std::vector<double> alpha(size_t(n) * (n + 1), 0.0);
        for (int r = 0; r < n; ++r) alpha[r * (n + 1) + 1 + r] = 1.0;
        alpha[(k % n) * (n + 1)] = 1.0;
        layout.add_values(s + "static_alpha", {n, n + 1}, alpha);
        layout.add_constant(s + "static_beta", {n}, 1.0);
        layout.add_constant(s + "w_alpha", {d, n + 1}, 0.0);
        layout.add_constant(s + "w_beta", {d, 1}, 0.0);
        layout.add_constant(s + "s_alpha", {1}, 0.01);
        layout.add_constant(s + "s_beta", {1}, 0.01);
        layout.add_constant(s + "norm", {d}, 1.0);
      }
    }
  }

  void forward(Backbone<T>& net, const T* x0, T* features) override {
    run_layers_forward(net, *this, x0, features);
  }
  void backward(Backbone<T>& net, const T* dfeatures, T* dx0) override {
    run_layers_backward(net, *this, dfeatures, dx0);
  }

  // Per token, the input weights a_k = α[:,0], maps M_k = A_kᵀ and output weights b_k = β of
  // the last forward, composed as in stream_mixing.hpp. The readout counts as reading the mean
  // of the streams (the final norm removes the sum's factor n up to eps), so that a weight 1
  // means "as in a single residual stream" for every consumer.
  std::vector<double> path_weights(const Backbone<T>&) const override {
    std::vector<double> in, out;
    const StreamMixing mixing = collect(rows_, &in, &out);
    return stream_path_weights(mixing, in, out, ran_, std::vector<double>(n_, 1.0 / n_));
  }

  StreamMixing stream_mixing() const override { return collect(rows_, nullptr, nullptr); }

  // LogitLens: a depth state (the n streams) read out as this design's own readout does.
  void readout_state(Backbone<T>& net, const T* state, int64_t rows, int width,
                     T* features) override {
    this->read_out(net, state, rows, width, features);
  }

  // The sublayer steps of the layer loop (layer_loop.hpp); the state is MultiStream's.
  SublayerIO<T> sublayer_forward(Backbone<T>& net, int p, bool ffn) override {
    const int k = 2 * p + ffn, n = n_, n1 = n_ + 1, d = net.d();
    const int64_t rows = net.rows(), R = rows * n;
    Ops<T>& ops = net.ops();
    ran_[k] = true;
    Sublayer& c = subs_[k];
    const Ids id = ids(net, p, ffn);
    c.t.resize(R * (n + 2));
    c.alpha.resize(R * n1);
    c.beta.resize(R);
    c.x_in.resize(rows * d);
    c.u.resize(rows * d);
    c.y.resize(rows * d);
    const StreamInput<T> in = this->take_input(net, k);
    const T* H = in.H;
    // [z_α | z_β] = RMSNorm_k(H)·[W_α | W_β] per stream, read from H itself (normed_product.hpp)
    // with the rstd that came with H.
    normed_product_forward(ops, c.t.data(), in.rstd, gw_, H, R, d, weights(net, id));
    // α = static_alpha + s_α·tanh(z_α), β = static_beta + s_β·tanh(z_β); t keeps the tanh.
    for_each_index(ops.space(), R,
                   HcCoefficients<T>{c.alpha.data(), c.beta.data(), c.t.data(),
                                     net.value(id.static_alpha), net.value(id.static_beta),
                                     net.value(id.s_alpha), net.value(id.s_beta), n});
    // x_in = Σ_s α[s,0]·H[s] and the sublayer's own pre-norm of it, in one pass.
    combine_streams_normed(net, id.gain, c.x_in.data(), c.u.data(), c.pre_norm, H, c.alpha.data(),
                           n1, n);
    if (ffn)
      net.ffn_forward(p, c.u.data(), c.y.data());
    else
      net.attention_forward(p, c.u.data(), c.y.data());
    return {c.u.data(), c.y.data()};
  }

  // H'[j] = Σ_s α[s,j+1]·H[s] + β[j]·y into the state; H stays in the sublayer's input.
  void sublayer_merge(Backbone<T>& net, int p, bool ffn) override {
    const int k = 2 * p + ffn;
    const Sublayer& c = subs_[k];
    this->mix_into_state(net, k, c.y.data(), c.beta.data(), c.alpha.data(), alpha_map());
  }

  void release_block(Backbone<T>& net, int p) override {
    MultiStream<T>::release_block(net, p);
    for (int k : {2 * p, 2 * p + 1}) subs_[k] = {};
  }

  // dstate_ holds ∂/∂H' on entry and ∂/∂H on exit.
  void sublayer_backward(Backbone<T>& net, int p, bool ffn) override {
    const int k = 2 * p + ffn, n = n_, n1 = n_ + 1, d = net.d();
    const int64_t rows = net.rows(), R = rows * n;
    Ops<T>& ops = net.ops();
    Sublayer& c = subs_[k];
    const Ids id = ids(net, p, ffn);
    const StreamInput<T> in = this->input(k);
    const T* H = in.H;
    dalpha_.resize(R * n1);
    dbeta_.resize(R);
    dy_.resize(rows * d);
    du_.resize(rows * d);
    dx_.resize(rows * d);
    dH_.resize(R * d);
    mix_streams_backward(ops.space(), net.fused_kernels(), dy_.data(), dbeta_.data(),
                         dalpha_.data(), dH_.data(), dstate_.data(), H, c.y.data(), c.beta.data(),
                         c.alpha.data(), alpha_map(), rows, n, d);
    if (ffn)
      net.ffn_backward(p, dy_.data(), du_.data());
    else
      net.attention_backward(p, dy_.data(), du_.data());
    net.rmsnorm_backward(id.gain, du_.data(), dx_.data(), c.pre_norm, rows, d);
    // x_in = Σ_s w_s·H[s]; its input gradient may go into the stream norm's backward below.
    const auto combine_term = combine_streams_normed_backward(net, dalpha_.data(), dH_.data(),
                                                              dx_.data(), H, c.alpha.data(), n1, n);
    // α = static + s_α·tanh(z_α): static, scale and logit gradients.
    dz_.resize(R * (n + 2));
    SumTargets<T> targets;
    targets.add(net.grad(id.static_alpha), n * n1)
        .add(net.grad(id.static_beta), n)
        .add(net.grad(id.s_alpha), 1)
        .add(net.grad(id.s_beta), 1);
    for_each_row_sum(ops.space(), rows, targets,
                     HcCoefficientGrads<T>{dz_.data(), dalpha_.data(), dbeta_.data(), c.t.data(),
                                           net.value(id.s_alpha), net.value(id.s_beta), n});
    // z = RMSNorm_k(H)·[W_α | W_β]: the weight and gain gradients, and ∂H added into dH.
    normed_product_backward(ops, dH_.data(), dz_.data(), H, in.rstd, R, d, weights(net, id), gw_,
                            dzs_, g_, dn_, combine_term);
    this->pass_gradient_on(net, dH_);
  }

 private:
  struct Sublayer {
    NormCache<T> pre_norm;  // its x: x_in
    // t: the coefficient logits' tanh [rows·n, n+2] (the stream norm's rstd is kept with H).
    Buffer<T> t, alpha, beta, x_in, u, y;
  };

  struct Ids {
    int static_alpha, static_beta, w_alpha, w_beta, s_alpha, s_beta, norm, gain;
  };
  Ids ids(Backbone<T>& net, int p, bool ffn) const {
    const std::string s = ffn ? "ffn_hc." : "attn_hc.";
    return {
        net.block_param(p, s + "static_alpha"), net.block_param(p, s + "static_beta"),
        net.block_param(p, s + "w_alpha"),      net.block_param(p, s + "w_beta"),
        net.block_param(p, s + "s_alpha"),      net.block_param(p, s + "s_beta"),
        net.block_param(p, s + "norm"),         net.block_param(p, ffn ? "ffn_norm" : "attn_norm")};
  }

  // The stream norm's gain and [W_α | W_β] with their gradients.
  NormedWeights<T> weights(Backbone<T>& net, const Ids& id) const {
    return {net.value(id.norm), net.value(id.w_alpha), net.value(id.w_beta), n_ + 1, 1,
            net.grad(id.norm),  net.grad(id.w_alpha),  net.grad(id.w_beta)};
  }

  // α [rows, n, n+1]: column 0 weighs the streams into the sublayer input, column 1 + i the
  // streams into output stream i, so M(r, i, j) = α[r, j, 1 + i] (ops.hpp StreamMapLayout).
  StreamMapLayout alpha_map() const { return {int64_t(n_) * (n_ + 1), 1, n_ + 1, 1}; }

  // Maps M_k = A_kᵀ (identity for skipped sublayers) and optionally a_k, b_k per token.
  StreamMixing collect(int64_t rows, std::vector<double>* in, std::vector<double>* out) const {
    const int n = n_, n1 = n_ + 1;
    std::vector<std::vector<T>> host_alpha(subs_.size()), host_beta(subs_.size());
    for (size_t k = 0; k < ran_.size(); ++k)  // empty before the first forward
      if (ran_[k]) host_alpha[k] = subs_[k].alpha.to_host(), host_beta[k] = subs_[k].beta.to_host();
    return gather_stream_maps(n, int(subs_.size()), rows, ran_, in, out,
                              [&](int k, int64_t t, double* map, double* a, double* b) {
                                const std::vector<T>& alphas = host_alpha[k];
                                const std::vector<T>& betas = host_beta[k];
                                for (int s = 0; s < n; ++s) {
                                  const T* alpha = &alphas[(t * n + s) * n1];
                                  for (int j = 0; j < n; ++j) map[j * n + s] = alpha[1 + j];
                                  if (a) a[s] = alpha[0];
                                  if (b) b[s] = betas[t * n + s];
                                }
                              });
  }

  using MultiStream<T>::n_;
  using MultiStream<T>::dstate_;
  using MultiStream<T>::ran_;
  using MultiStream<T>::rows_;

  std::vector<Sublayer> subs_;
  Buffer<T> dalpha_, dbeta_, dy_, du_, dx_, dH_, dz_;
  Buffer<T> gw_, dzs_, g_, dn_;  // normed_product's scratch
};

}  // namespace

DesignInfo hc_design() {
  return make_design_info<HyperConnections>(
      {.name = "hc",
       .title = "HC",
       .summary = "Hyper-Connections (dynamic, tanh): n streams mixed per token",
       .section = 7,
       .options = {{"hc_streams", "4", "number of residual streams n",
                    OptionValues::integer_at_least(1)},
                   {"hc_readout", "norm_then_sum",
                    "norm_then_sum (authors' code: final norm per stream, then sum) or "
                    "sum_then_norm (HC paper)",
                    OptionValues::one_of({"norm_then_sum", "sum_then_norm"})}},
       // The static routing [a_k | A_k] and b_k (spec: no weight decay).
       .no_decay = {"static_alpha", "static_beta"},
       // The n-stream state each of a block's two sublayers reads (its normalised copy is
       // not kept: normed_product.hpp).
       .state_values_per_token_block =
           [](const ModelConfig& c) { return 2.0 * hc_streams(c) * c.d_model; },
       // Under train.recompute = blocks: the n streams a block reads.
       .recompute_values_per_token_block =
           [](const ModelConfig& c) { return double(hc_streams(c)) * c.d_model; },
       .rounds_state = true});
}

}  // namespace db
