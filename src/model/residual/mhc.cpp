// §8 mHC — manifold-constrained Hyper-Connections (arXiv 2512.24880).
// Streams X ∈ R^{n×d} per token (stored [rows, n, d]); X_0 = n copies of the embedding.
// Sublayer k: v = RMSNorm_k(vec(X)) over all n·d values (stream-major), z = v·φ_k, then
//   H_pre = σ(α_pre·z_pre + b_pre), H_post = 2σ(α_post·z_post + b_post),
//   H_res = Sinkhorn(α_res·mat(z_res) + b_res);
//   y = F_k(N_k(Σ_s H_pre[s]·X[s]));  X'[i] = Σ_j H_res[i][j]·X[j] + H_post[i]·y.
// Readout: mean of the streams, final RMSNorm. Names and layouts: doc/parameters.md.
#include <cmath>

#include "core/error.hpp"
#include "model/residual/design.hpp"
#include "model/residual/normed_product.hpp"
#include "model/residual/sinkhorn.hpp"
#include "model/residual/stream.hpp"
#include "model/residual/stream_kernels.hpp"
#include "model/residual/stream_mixing.hpp"
#include "model/residual/stream_readout.hpp"

namespace db {
namespace {

std::string block_name(int b, const std::string& suffix) {
  return "blocks." + std::to_string(b) + "." + suffix;
}

struct MhcOptions {
  int n;
  int sinkhorn_iters;
  double sinkhorn_eps;
  bool identity_init;
};

MhcOptions mhc_options(const ModelConfig& c) {
  MhcOptions o{int(c.option("mhc_streams", 4.0)), int(c.option("mhc_sinkhorn_iters", 20.0)),
               c.option("mhc_sinkhorn_eps", 1e-6), c.option("mhc_identity_init", false)};
  DB_REQUIRE(o.n >= 1 && o.n <= kMaxSinkhornN, "mhc_streams must be in [1, 16]");
  DB_REQUIRE(o.sinkhorn_iters >= 0, "mhc_sinkhorn_iters must be ≥ 0");
  return o;
}

template <class T>
DB_HD T sigmoid(T x) {
  using std::exp;  // expf for float on the host, as the device's exp overload
  return T(1) / (T(1) + exp(-x));
}

// One token's coefficients (§8) from z [n² + 2n] = v·φ: pre [n], post [n], res_logits [n²].
template <class T>
struct MhcCoefficients {
  T *pre, *post, *res_logits;
  const T *z, *gates, *bias;
  int n;
  DB_HD void operator()(int64_t r) const {
    const int nn = n * n, m = nn + 2 * n;
    const T* zr = z + r * m;
    for (int s = 0; s < n; ++s) {
      pre[r * n + s] = sigmoid(T(gates[0] * zr[s] + bias[s]));
      post[r * n + s] = T(2) * sigmoid(T(gates[1] * zr[n + s] + bias[n + s]));
    }
    for (int e = 0; e < nn; ++e)
      res_logits[r * nn + e] = gates[2] * zr[2 * n + e] + bias[2 * n + e];
  }
};

// One token of their backward: dl = ∂loss/∂(coefficient logit) (σ' = σ(1−σ),
// (2σ)' = q(1 − q/2) for q = 2σ), dz = gate·dl (overwritten), and into the row sums the
// gradients of the 3 gates (dl·z) and of the n² + 2n biases (dl).
template <class T>
struct MhcCoefficientGrads {
  T* dz;
  const T *dpre, *dpost, *dres_logits, *z, *pre, *post, *gates;
  int n;
  DB_HD void operator()(int64_t r, double* sums) const {
    const int nn = n * n, m = nn + 2 * n;
    for (int c = 0; c < m; ++c) {
      T dl;
      int gate;
      if (c < n) {
        const T p = pre[r * n + c];
        dl = dpre[r * n + c] * p * (T(1) - p), gate = 0;
      } else if (c < 2 * n) {
        const T q = post[r * n + c - n];
        dl = dpost[r * n + c - n] * q * (T(1) - q / T(2)), gate = 1;
      } else {
        dl = dres_logits[r * nn + c - 2 * n], gate = 2;
      }
      sums[gate] += double(dl) * z[r * m + c];
      sums[3 + c] += dl;
      dz[r * m + c] = gates[gate] * dl;
    }
  }
};

template <class T>
class ManifoldHyperConnections : public ResidualDesign<T>,
                                 public MultiStream<T>,
                                 public StreamMixingSource {
 public:
  explicit ManifoldHyperConnections(const ModelConfig& c)
      : MultiStream<T>(c, mhc_options(c).n, /*norm_streams=*/mhc_options(c).n,
                       StreamReadout::mean_then_norm),
        opt_(mhc_options(c)),
        subs_(2 * c.n_layer) {}

  static void declare(ParameterLayout& layout, const ModelConfig& c) {
    const MhcOptions o = mhc_options(c);
    const int64_t n = o.n, d = c.d_model, m = n * n + 2 * n;
    declare_block_norms(layout, c, {"attn_norm", "ffn_norm"});
    for (int b = 0; b < c.n_layer; ++b) {
      layout.set_init_std(block_name(b, "wo"), c.init_std / std::sqrt(double(n)));
      layout.set_init_std(block_name(b, "w2"), c.init_std / std::sqrt(double(n)));
      for (int ffn = 0; ffn < 2; ++ffn) {
        const int k = 2 * b + ffn;
        const std::string s = block_name(b, ffn ? "ffn_mhc." : "attn_mhc.");
        layout.add_matrix(s + "phi", {n * d, m}, c.init_std);
        // Biases 0 (spec Choice: H_pre ≈ 0.5, H_post ≈ 1, H_res ≈ J/n), or ±8 for
        // mhc_identity_init: H_pre ≈ e_{k mod n}, H_res ≈ I. No weight decay: mhc_design()'s
        // no_decay.
        std::vector<double> bias(m, 0.0);
        if (o.identity_init) {
          for (int i = 0; i < n; ++i) bias[i] = i == k % n ? 8.0 : -8.0;
          for (int i = 0; i < n; ++i)
            for (int j = 0; j < n; ++j) bias[2 * n + i * n + j] = i == j ? 8.0 : -8.0;
        }
        layout.add_values(s + "bias", {m}, bias);
        layout.add_constant(s + "gates", {3}, 0.01);
        layout.add_constant(s + "norm", {n * d}, 1.0);
      }
    }
  }

  void forward(Backbone<T>& net, const T* x0, T* features) override {
    run_layers_forward(net, *this, x0, features);
  }
  void backward(Backbone<T>& net, const T* dfeatures, T* dx0) override {
    run_layers_backward(net, *this, dfeatures, dx0);
  }

  // a_k = H_pre, M_k = H_res, b_k = H_post per token (stream_mixing.hpp); readout = mean.
  std::vector<double> path_weights(const Backbone<T>&) const override {
    std::vector<double> in, out;
    const StreamMixing mixing = collect(&in, &out);
    return stream_path_weights(mixing, in, out, ran_, std::vector<double>(opt_.n, 1.0 / opt_.n));
  }

  StreamMixing stream_mixing() const override { return collect(nullptr, nullptr); }

  // LogitLens: a depth state (the n streams) read out as the design does: mean, final norm.
  void readout_state(Backbone<T>& net, const T* state, int64_t rows, int width,
                     T* features) override {
    this->read_out(net, state, rows, width, features);
  }

  // The sublayer steps of the layer loop (layer_loop.hpp); the state is MultiStream's.
  SublayerIO<T> sublayer_forward(Backbone<T>& net, int p, bool ffn) override {
    const int k = 2 * p + ffn, n = opt_.n, nn = n * n, m = nn + 2 * n, d = net.d(), nd = n * d;
    const int64_t rows = net.rows();
    Ops<T>& ops = net.ops();
    ran_[k] = true;
    Sublayer& c = subs_[k];
    const Ids id = ids(net, p, ffn);
    c.z.resize(rows * m);
    c.pre.resize(rows * n);
    c.post.resize(rows * n);
    c.res_logits.resize(rows * nn);
    c.res.resize(rows * nn);
    c.x_in.resize(rows * d);
    c.u.resize(rows * d);
    c.y.resize(rows * d);
    const StreamInput<T> in = this->take_input(net, k);
    const T* X = in.H;
    // z = v·φ with v = RMSNorm_k(vec(X)), read from X itself (normed_product.hpp) with the rstd
    // that came with X.
    normed_product_forward(ops, c.z.data(), in.rstd, gw_, X, rows, nd, weights(net, id));
    for_each_index(ops.space(), rows,
                   MhcCoefficients<T>{c.pre.data(), c.post.data(), c.res_logits.data(), c.z.data(),
                                      net.value(id.gates), net.value(id.bias), n});
    sinkhorn_forward(ops.space(), c.res.data(), c.res_logits.data(), sinkhorn_shape(rows));
    // x_in = Σ_s H_pre[s]·X[s] and the sublayer's own pre-norm of it, in one pass.
    combine_streams_normed(net, id.gain, c.x_in.data(), c.u.data(), c.pre_norm, X, c.pre.data(), 1,
                           n);
    if (ffn)
      net.ffn_forward(p, c.u.data(), c.y.data());
    else
      net.attention_forward(p, c.u.data(), c.y.data());
    return {c.u.data(), c.y.data()};
  }

  // X'[i] = Σ_j H_res[i][j]·X[j] + H_post[i]·y into the state; X stays in the sublayer's input.
  void sublayer_merge(Backbone<T>& net, int p, bool ffn) override {
    const int k = 2 * p + ffn;
    const Sublayer& c = subs_[k];
    this->mix_into_state(net, k, c.y.data(), c.post.data(), c.res.data(), res_map());
  }

  void release_block(Backbone<T>& net, int p) override {
    MultiStream<T>::release_block(net, p);
    for (int k : {2 * p, 2 * p + 1}) subs_[k] = {};
  }

  // dstate_ holds ∂/∂X' on entry and ∂/∂X on exit.
  void sublayer_backward(Backbone<T>& net, int p, bool ffn) override {
    const int k = 2 * p + ffn, n = opt_.n, nn = n * n, m = nn + 2 * n, d = net.d(), nd = n * d;
    const int64_t rows = net.rows();
    Ops<T>& ops = net.ops();
    Sublayer& c = subs_[k];
    const Ids id = ids(net, p, ffn);
    const StreamInput<T> in = this->input(k);
    const T* X = in.H;
    dpre_.resize(rows * n);
    dpost_.resize(rows * n);
    dres_.resize(rows * nn);
    dy_.resize(rows * d);
    du_.resize(rows * d);
    dx_.resize(rows * d);
    dX_.resize(rows * nd);
    mix_streams_backward(ops.space(), net.fused_kernels(), dy_.data(), dpost_.data(), dres_.data(),
                         dX_.data(), dstate_.data(), X, c.y.data(), c.post.data(), c.res.data(),
                         res_map(), rows, n, d);
    if (ffn)
      net.ffn_backward(p, dy_.data(), du_.data());
    else
      net.attention_backward(p, dy_.data(), du_.data());
    net.rmsnorm_backward(id.gain, du_.data(), dx_.data(), c.pre_norm, rows, d);
    // x_in = Σ_s w_s·X[s]; its input gradient may go into the stream norm's backward below.
    const auto combine_term = combine_streams_normed_backward(net, dpre_.data(), dX_.data(),
                                                              dx_.data(), X, c.pre.data(), 1, n);
    // Coefficient logits → gates, biases and z.
    dres_logits_.resize(rows * nn);
    dz_.resize(rows * m);
    sinkhorn_backward(ops.space(), dres_logits_.data(), dres_.data(), c.res_logits.data(),
                      sinkhorn_shape(rows));
    SumTargets<T> targets;
    targets.add(net.grad(id.gates), 3).add(net.grad(id.bias), m);
    for_each_row_sum(
        ops.space(), rows, targets,
        MhcCoefficientGrads<T>{dz_.data(), dpre_.data(), dpost_.data(), dres_logits_.data(),
                               c.z.data(), c.pre.data(), c.post.data(), net.value(id.gates), n});
    // z = v·φ: the gradients of φ and of the norm's gain, and ∂X added into dX.
    normed_product_backward(ops, dX_.data(), dz_.data(), X, in.rstd, rows, nd, weights(net, id),
                            gw_, dzs_, g_, dn_, combine_term);
    this->pass_gradient_on(net, dX_);
  }

 private:
  struct Sublayer {
    NormCache<T> pre_norm;  // its x: x_in
    // z = v·φ, the coefficient logits (the n·d-wide norm's rstd is kept with X).
    Buffer<T> z, pre, post, res_logits, res, x_in, u, y;
  };

  struct Ids {
    int phi, bias, gates, norm, gain;
  };
  Ids ids(Backbone<T>& net, int p, bool ffn) const {
    const std::string s = ffn ? "ffn_mhc." : "attn_mhc.";
    return {net.block_param(p, s + "phi"), net.block_param(p, s + "bias"),
            net.block_param(p, s + "gates"), net.block_param(p, s + "norm"),
            net.block_param(p, ffn ? "ffn_norm" : "attn_norm")};
  }

  // The n·d-wide norm's gain and φ with their gradients.
  NormedWeights<T> weights(Backbone<T>& net, const Ids& id) const {
    const int m = opt_.n * opt_.n + 2 * opt_.n;
    return {net.value(id.norm), net.value(id.phi), nullptr, m, 0,
            net.grad(id.norm),  net.grad(id.phi),  nullptr};
  }

  SinkhornShape sinkhorn_shape(int64_t rows) const {
    return {rows, opt_.n, opt_.sinkhorn_iters, opt_.sinkhorn_eps};
  }

  // H_res [rows, n, n]: M(r, i, j) = H_res[r, i, j] (ops.hpp StreamMapLayout).
  StreamMapLayout res_map() const { return {int64_t(opt_.n) * opt_.n, opt_.n, 1, 0}; }

  // Maps M_k = H_res,k (identity for skipped sublayers); optionally a_k = H_pre, b_k = H_post.
  StreamMixing collect(std::vector<double>* in, std::vector<double>* out) const {
    const int n = opt_.n, nn = n * n;
    std::vector<std::vector<T>> res(subs_.size()), pre(subs_.size()), post(subs_.size());
    for (size_t k = 0; k < ran_.size(); ++k)  // empty before the first forward
      if (ran_[k])
        res[k] = subs_[k].res.to_host(), pre[k] = subs_[k].pre.to_host(),
        post[k] = subs_[k].post.to_host();
    return gather_stream_maps(n, int(subs_.size()), rows_, ran_, in, out,
                              [&](int k, int64_t t, double* map, double* a, double* b) {
                                for (int e = 0; e < nn; ++e) map[e] = res[k][t * nn + e];
                                for (int s = 0; s < n; ++s) {
                                  if (a) a[s] = pre[k][t * n + s];
                                  if (b) b[s] = post[k][t * n + s];
                                }
                              });
  }

  using MultiStream<T>::n_;
  using MultiStream<T>::dstate_;
  using MultiStream<T>::ran_;
  using MultiStream<T>::rows_;

  MhcOptions opt_;
  std::vector<Sublayer> subs_;
  Buffer<T> dpre_, dpost_, dres_, dy_, du_, dx_, dX_, dres_logits_, dz_;
  Buffer<T> gw_, dzs_, g_, dn_;  // normed_product's scratch
};

}  // namespace

DesignInfo mhc_design() {
  using V = OptionValues;
  return make_design_info<ManifoldHyperConnections>(
      {.name = "mhc",
       .title = "mHC",
       .summary = "manifold-constrained Hyper-Connections: Sinkhorn-normalised stream mixing",
       .section = 8,
       .options = {{"mhc_streams", "4", "number of residual streams n", V::integer_at_least(1)},
                   {"mhc_sinkhorn_iters", "20",
                    "Sinkhorn iterations (each a row then a column normalisation)",
                    V::integer_at_least(0)},
                   {"mhc_sinkhorn_eps", "1e-6", "eps added to the Sinkhorn row and column sums",
                    V::real_at_least(0)},
                   {"mhc_identity_init", "false",
                    "init biases ±8 (H_res ≈ I, H_pre ≈ one-hot) instead of 0 (H_res ≈ J/n)",
                    V::boolean()}},
       // Spec: no weight decay on the biases and gates.
       .no_decay = {"bias", "gates"},
       // The n-stream state each of a block's two sublayers reads (its normalised copy is
       // not kept: normed_product.hpp).
       .state_values_per_token_block =
           [](const ModelConfig& c) { return 2.0 * mhc_options(c).n * c.d_model; },
       // Under train.recompute = blocks: the n streams a block reads.
       .recompute_values_per_token_block =
           [](const ModelConfig& c) { return double(mhc_options(c).n) * c.d_model; },
       .rounds_state = true});
}

}  // namespace db
