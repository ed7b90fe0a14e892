// The multi-stream (HC §7, mHC §8) and depth-attention (AttnRes §9, §10) designs: the spec's
// init equivalences with identical backbone weights, path weights and stream maps at init,
// parameter counts and weight-decay flags, the skip semantics of diagnostics.md, and Block
// AttnRes with S > 1 against finite differences and the PyTorch reference.
#define BOOST_TEST_MODULE stream_designs
#define BOOST_TEST_DYN_LINK
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "core/rng.hpp"
#include "model/model.hpp"
#include "model/residual/registry.hpp"
#include "model/residual/stream_mixing.hpp"
#include "ops/cpu/gemm.hpp"
#include "support/gradcheck.hpp"
#include "support/h5_tensors.hpp"

using namespace db;

namespace {

constexpr int kBatch = 2, kSeq = 6;

ModelConfig tiny(const std::string& arch, std::map<std::string, std::string> options = {}) {
  ModelConfig c;
  c.arch = arch;
  c.n_layer = 4;
  c.d_model = 16;
  c.n_head = 2;
  c.vocab_size = 11;
  c.design_options = std::move(options);
  return c;
}

std::vector<int32_t> tokens_for(const ModelConfig& c) {
  std::vector<int32_t> t(kBatch * kSeq);
  Rng rng(9);
  for (auto& x : t) x = int32_t(rng.below(c.vocab_size));
  return t;
}

// Copies every parameter `to` has under the same name and shape from `from`.
void copy_shared(Model<double>& from, Model<double>& to) {
  for (const ParameterSpec& s : to.layout().specs())
    if (from.layout().has(s.name)) {
      const ParameterSpec& f = from.layout().spec(from.layout().id(s.name));
      BOOST_REQUIRE(f.size() == s.size());
      std::copy_n(from.params().values().begin() + f.offset, s.size(),
                  to.params().values().begin() + s.offset);
    }
}

struct DepthStates {
  std::vector<std::vector<double>> z;
  int width = 0;
  ForwardObserver<double> observer;
  DepthStates() {
    observer.depth_state = [this](int l, const double* state, int64_t rows, int w) {
      if (int(z.size()) <= l) z.resize(l + 1);
      z[l].assign(state, state + rows * w);
      width = w;
    };
  }
};

DepthStates depth_states(Model<double>& m, const std::vector<int32_t>& tokens) {
  DepthStates s;
  m.backbone().observer = &s.observer;
  m.forward_loss(tokens.data(), kBatch, kSeq);
  m.backbone().observer = nullptr;
  return s;
}

double max_relative_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double scale = 1e-300, worst = 0;
  for (double v : b) scale = std::max(scale, std::fabs(v));
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a[i] - b[i]) / scale);
  return worst;
}

// Stream s of every token of a [rows, n, d] state.
std::vector<double> stream(const std::vector<double>& state, int n, int d, int s) {
  std::vector<double> out;
  for (size_t r = 0; r < state.size() / (n * d); ++r)
    out.insert(out.end(), state.begin() + (r * n + s) * d, state.begin() + (r * n + s + 1) * d);
  return out;
}

std::vector<double> logits_of(Model<double>& m, const std::vector<int32_t>& tokens) {
  std::vector<double> out;
  m.logits(tokens.data(), kBatch, kSeq, out);
  return out;
}

// Roy & Vetterli effective rank: exp of the entropy of the L1-normalised singular values
// (singular values from a Jacobi eigen-decomposition of MᵀM, float64).
double effective_rank(const std::vector<double>& M, int n) {
  std::vector<double> A(n * n, 0.0);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j)
      for (int k = 0; k < n; ++k) A[i * n + j] += M[k * n + i] * M[k * n + j];
  for (int sweep = 0; sweep < 50; ++sweep)
    for (int p = 0; p < n; ++p)
      for (int q = p + 1; q < n; ++q) {
        if (std::fabs(A[p * n + q]) < 1e-300) continue;
        const double theta = (A[q * n + q] - A[p * n + p]) / (2 * A[p * n + q]);
        const double t = (theta >= 0 ? 1 : -1) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < n; ++k) {  // A ← Jᵀ A J
          const double akp = A[k * n + p], akq = A[k * n + q];
          A[k * n + p] = c * akp - s * akq, A[k * n + q] = s * akp + c * akq;
        }
        for (int k = 0; k < n; ++k) {
          const double apk = A[p * n + k], aqk = A[q * n + k];
          A[p * n + k] = c * apk - s * aqk, A[q * n + k] = s * apk + c * aqk;
        }
      }
  std::vector<double> sv(n);
  double total = 0;
  for (int i = 0; i < n; ++i) total += sv[i] = std::sqrt(std::max(0.0, A[i * n + i]));
  double entropy = 0;
  for (double s : sv)
    if (s > 0) entropy -= s / total * std::log(s / total);
  return std::exp(entropy);
}

}  // namespace

BOOST_AUTO_TEST_CASE(hc_streams_equal_the_pre_ln_stream_bitwise_at_init) {
  cpu::set_cpu_threads(1);
  Model<double> pre(tiny("pre_ln")), hc(tiny("hc"));
  pre.initialize(3);
  hc.initialize(4);
  copy_shared(pre, hc);
  const auto tokens = tokens_for(pre.config());
  const DepthStates a = depth_states(pre, tokens), b = depth_states(hc, tokens);
  BOOST_TEST(b.width == 4 * 16);
  BOOST_REQUIRE(a.z.size() == 5u && b.z.size() == 5u);
  for (int l = 0; l <= 4; ++l)
    for (int s = 0; s < 4; ++s) BOOST_TEST((stream(b.z[l], 4, 16, s) == a.z[l]), "depth " << l);
  // norm_then_sum (default): every stream normalised, then summed: n × Pre-LN logits.
  const auto lp = logits_of(pre, tokens), lh = logits_of(hc, tokens);
  std::vector<double> four(lp.size());
  for (size_t i = 0; i < lp.size(); ++i) four[i] = 4 * lp[i];
  BOOST_TEST(max_relative_difference(lh, four) < 1e-14);
}

BOOST_AUTO_TEST_CASE(hc_sum_then_norm_logits_equal_pre_ln_up_to_the_final_norm_eps) {
  cpu::set_cpu_threads(1);
  // RMSNorm(n·x) = g·x / sqrt(mean(x²) + eps/n²): exact to rounding only with eps = 0; at the
  // default eps the relative difference is ~1e-3 (tests/reference/README.md).
  for (double eps : {0.0, 1e-6}) {
    ModelConfig cp = tiny("pre_ln"), ch = tiny("hc", {{"hc_readout", "sum_then_norm"}});
    cp.norm_eps = ch.norm_eps = eps;
    Model<double> pre(cp), hc(ch);
    pre.initialize(3);
    hc.initialize(4);
    copy_shared(pre, hc);
    const auto tokens = tokens_for(cp);
    const double diff = max_relative_difference(logits_of(hc, tokens), logits_of(pre, tokens));
    if (eps == 0)
      BOOST_TEST(diff < 1e-13);
    else
      BOOST_TEST((diff > 0 && diff < 1e-2));
  }
}

BOOST_AUTO_TEST_CASE(mhc_streams_equal_each_other_and_approximately_pre_ln_at_init) {
  cpu::set_cpu_threads(1);
  for (bool zero_phi : {true, false}) {
    Model<double> pre(tiny("pre_ln")), mhc(tiny("mhc"));
    pre.initialize(3);
    mhc.initialize(4);
    copy_shared(pre, mhc);
    if (zero_phi)
      for (const ParameterSpec& s : mhc.layout().specs())
        if (s.name.ends_with(".phi"))
          std::fill_n(mhc.params().values().begin() + s.offset, s.size(), 0.0);
    const auto tokens = tokens_for(pre.config());
    const DepthStates a = depth_states(pre, tokens), b = depth_states(mhc, tokens);
    for (int l = 0; l <= 4; ++l) {
      const auto s0 = stream(b.z[l], 4, 16, 0);
      for (int s = 1; s < 4; ++s) {
        const double d = max_relative_difference(stream(b.z[l], 4, 16, s), s0);
        if (zero_phi)
          BOOST_TEST(d == 0.0, "φ = 0: streams bitwise equal, depth " << l);
        else
          BOOST_TEST(d < 1e-2, "random φ: streams nearly equal, depth " << l << ": " << d);
      }
      // H_pre ≈ 0.5 makes the input 2x, and RMSNorm(2x) ≠ RMSNorm(x) at eps 1e-6: ~1e-3.
      BOOST_TEST(max_relative_difference(s0, a.z[l]) < 2e-2, "depth " << l);
    }
  }
}

BOOST_AUTO_TEST_CASE(mhc_with_zero_eps_and_zero_phi_equals_pre_ln_to_rounding) {
  cpu::set_cpu_threads(1);
  ModelConfig cp = tiny("pre_ln"), cm = tiny("mhc", {{"mhc_sinkhorn_eps", "0"}});
  cp.norm_eps = cm.norm_eps = 0;
  Model<double> pre(cp), mhc(cm);
  pre.initialize(3);
  mhc.initialize(4);
  copy_shared(pre, mhc);
  for (const ParameterSpec& s : mhc.layout().specs())
    if (s.name.ends_with(".phi"))
      std::fill_n(mhc.params().values().begin() + s.offset, s.size(), 0.0);
  const auto tokens = tokens_for(cp);
  const DepthStates a = depth_states(pre, tokens), b = depth_states(mhc, tokens);
  for (int l = 0; l <= 4; ++l)
    BOOST_TEST(max_relative_difference(stream(b.z[l], 4, 16, 2), a.z[l]) < 1e-13);
  BOOST_TEST(max_relative_difference(logits_of(mhc, tokens), logits_of(pre, tokens)) < 1e-13);
}

BOOST_AUTO_TEST_CASE(block_attnres_with_block_size_one_equals_full_attnres_bitwise) {
  cpu::set_cpu_threads(1);
  for (const auto& options : std::vector<std::map<std::string, std::string>>{
           {{"attnres_block_size", "1"}}, {{"attnres_blocks", "8"}}}) {
    Model<double> full(tiny("attnres_full")), block(tiny("attnres_block", options));
    full.initialize(3);
    Rng jitter(5);
    for (double& v : full.params().values()) v += 0.1 * jitter.normal();
    copy_shared(full, block);
    const auto tokens = tokens_for(full.config());
    full.params().zero_grads();
    block.params().zero_grads();
    const double lf = full.forward_backward(tokens.data(), kBatch, kSeq, 1.0);
    const double lb = block.forward_backward(tokens.data(), kBatch, kSeq, 1.0);
    BOOST_TEST(lf == lb);
    const auto gf = full.params().grads(), gb = block.params().grads();
    BOOST_TEST(std::equal(gf.begin(), gf.end(), gb.begin()));
    BOOST_TEST((logits_of(full, tokens) == logits_of(block, tokens)));
  }
}

BOOST_AUTO_TEST_CASE(full_attnres_averages_its_sources_uniformly_at_init) {
  cpu::set_cpu_threads(1);
  Model<double> m(tiny("attnres_full"));
  m.initialize(3);
  for (const ParameterSpec& s : m.layout().specs())
    if (s.name.ends_with(".query")) {  // every pseudo-query, the readout's included, is zero
      const auto v = m.params().values().subspan(s.offset, s.size());
      BOOST_TEST(std::all_of(v.begin(), v.end(), [](double x) { return x == 0.0; }), s.name);
    }
  const auto tokens = tokens_for(m.config());
  std::vector<std::vector<double>> outputs(8);
  DepthStates states;
  states.observer.sublayer = [&](int k, const double*, const double* y, int64_t rows, int w) {
    outputs[k].assign(y, y + rows * w);
  };
  m.backbone().observer = &states.observer;
  m.forward_loss(tokens.data(), kBatch, kSeq);
  m.backbone().observer = nullptr;
  // z_1 = the mix feeding block 1's attention = plain mean of embedding, y_0, y_1.
  std::vector<double> mean(states.z[0].size());
  for (size_t i = 0; i < mean.size(); ++i)
    mean[i] = (states.z[0][i] + outputs[0][i] + outputs[1][i]) / 3;
  BOOST_TEST(max_relative_difference(states.z[1], mean) < 1e-14);
  // Path weights: consumer c (> 0) gives each of its c + 1 sources exactly 1/(c + 1).
  const std::vector<double> w = m.design().path_weights(m.backbone());
  const int consumers = 9;
  BOOST_TEST(w[0] == 1.0);  // sublayer 0 reads the embedding
  for (int c = 1; c < consumers; ++c)
    for (int s = 0; s < 9; ++s) {
      const double v = w[s * consumers + c];
      if (s <= c)
        BOOST_TEST(std::fabs(v - 1.0 / (c + 1)) < 1e-15, "source " << s << " consumer " << c);
      else
        BOOST_TEST(std::isnan(v));
    }
}

BOOST_AUTO_TEST_CASE(path_weights_of_pre_ln_and_of_hc_at_init_are_all_one) {
  cpu::set_cpu_threads(1);
  for (const std::string arch : {"pre_ln", "hc"}) {
    Model<double> m(tiny(arch));
    m.initialize(3);
    const auto tokens = tokens_for(m.config());
    m.forward_loss(tokens.data(), kBatch, kSeq);
    const std::vector<double> w = m.design().path_weights(m.backbone());
    BOOST_REQUIRE(w.size() == 81u);
    for (int s = 0; s < 9; ++s)
      for (int c = 0; c < 9; ++c) {
        if (s <= c)
          BOOST_TEST(w[s * 9 + c] == 1.0, arch << " source " << s << " consumer " << c);
        else
          BOOST_TEST(std::isnan(w[s * 9 + c]));
      }
  }
}

BOOST_AUTO_TEST_CASE(hc_composes_identities_and_uniform_mhc_has_effective_rank_one) {
  cpu::set_cpu_threads(1);
  Model<double> hc(tiny("hc")), mhc(tiny("mhc"));
  hc.initialize(3);
  mhc.initialize(3);
  for (const ParameterSpec& s : mhc.layout().specs())  // φ = 0: H_res = Sinkhorn(0) ≈ J/n
    if (s.name.ends_with(".phi"))
      std::fill_n(mhc.params().values().begin() + s.offset, s.size(), 0.0);
  const auto tokens = tokens_for(hc.config());
  hc.forward_loss(tokens.data(), kBatch, kSeq);
  mhc.forward_loss(tokens.data(), kBatch, kSeq);
  const StreamMixing a = dynamic_cast<const StreamMixingSource&>(hc.design()).stream_mixing();
  const StreamMixing b = dynamic_cast<const StreamMixingSource&>(mhc.design()).stream_mixing();
  BOOST_TEST((a.n == 4 && a.sublayers == 8 && a.tokens == kBatch * kSeq));
  for (int i = 0; i < 8; ++i)
    for (int j = i; j < 8; ++j)
      for (int64_t t = 0; t < a.tokens; t += 5) {
        const std::vector<double> ma = composed_stream_map(a, i, j, t);
        for (int e = 0; e < 16; ++e) BOOST_TEST(ma[e] == (e % 5 == 0 ? 1.0 : 0.0));
        BOOST_TEST(std::fabs(effective_rank(ma, 4) - 4.0) < 1e-12);
        const std::vector<double> mb = composed_stream_map(b, i, j, t);
        for (double v : mb) BOOST_TEST(std::fabs(v - 0.25) < 1e-5);
        BOOST_TEST(effective_rank(mb, 4) < 1.0 + 1e-4);
      }
}

BOOST_AUTO_TEST_CASE(parameter_counts_match_the_closed_formulas) {
  ModelConfig c = tiny("pre_ln");
  c.n_layer = 8;
  c.d_model = 64;
  c.n_head = 4;
  c.vocab_size = 50;
  const int64_t L = 8, d = 64, V = 50, ff = c.ff_dim(), n = 4, m = n * n + 2 * n;
  const int64_t base = 2 * V * d + d + L * (4 * d * d + 3 * d * ff + 2 * d);
  const std::map<std::string, int64_t> extras = {
      {"pre_ln", 0},
      {"hc", 2 * L * (n * (n + 1) + n + d * (n + 1) + d + 2 + d)},
      {"mhc", 2 * L * (n * d * m + m + 3 + n * d)},
      {"attnres_full", (2 * L - 1) * 2 * d + 2 * d},
      {"attnres_block", (2 * L - 1) * 2 * d + 2 * d}};
  for (const auto& [arch, extra] : extras) {
    c.arch = arch;
    const ParameterCounts counts = count_parameters(c);
    BOOST_TEST(counts.total == base + extra, arch);
    // Everything but the embedding, head and final norm lives under blocks.{i}. (AttnRes's
    // readout mixer is model-level).
    BOOST_TEST(
        counts.backbone == base - 2 * V * d - d + extra - (arch.starts_with("attnres") ? 2 * d : 0),
        arch);
  }
}

BOOST_AUTO_TEST_CASE(hc_and_mhc_inits_and_weight_decay_flags_follow_the_spec) {
  const ParameterLayout hc = build_layout(tiny("hc"));
  const ParameterLayout mhc = build_layout(tiny("mhc"));
  for (const ParameterLayout* layout : {&hc, &mhc})
    for (const std::string w : {"blocks.1.wo", "blocks.1.w2", "blocks.1.wq", "blocks.1.w1"}) {
      const double want = w.ends_with("wo") || w.ends_with("w2") ? 0.01 : 0.02;  // 0.02/sqrt(4)
      BOOST_TEST(std::fabs(layout->spec(layout->id(w)).init_std - want) < 1e-15, w);
    }
  for (const ParameterSpec& s : hc.specs()) {
    const bool static_routing =
        s.name.ends_with(".static_alpha") || s.name.ends_with(".static_beta");
    BOOST_TEST(s.weight_decay == !static_routing, s.name);
  }
  for (const ParameterSpec& s : mhc.specs()) {
    const bool exempt = s.name.ends_with(".bias") || s.name.ends_with(".gates");
    BOOST_TEST(s.weight_decay == !exempt, s.name);
  }
  // [a_k | A_k] = [e_{k mod n} | I] for sublayer k = 2·3 + 1 = 7: a = e_3.
  Model<double> m(tiny("hc"));
  m.initialize(1);
  const ParameterSpec& a = m.layout().spec(m.layout().id("blocks.3.ffn_hc.static_alpha"));
  const double* v = m.params().values().data() + a.offset;
  for (int s = 0; s < 4; ++s) {
    BOOST_TEST(v[s * 5] == (s == 3 ? 1.0 : 0.0));
    for (int j = 0; j < 4; ++j) BOOST_TEST(v[s * 5 + 1 + j] == (s == j ? 1.0 : 0.0));
  }
}

BOOST_AUTO_TEST_CASE(skipping_a_block_leaves_the_depth_state_unchanged) {
  cpu::set_cpu_threads(1);
  for (const std::string arch : {"hc", "mhc", "attnres_full", "attnres_block"}) {
    Model<double> m(tiny(arch, arch == "attnres_block"
                                   ? std::map<std::string, std::string>{{"attnres_block_size", "3"}}
                                   : std::map<std::string, std::string>{}));
    m.initialize(3);
    Rng jitter(5);
    for (double& v : m.params().values()) v += 0.1 * jitter.normal();
    const auto tokens = tokens_for(m.config());
    const DepthStates full = depth_states(m, tokens);
    m.backbone().skip_block(1);
    const DepthStates skipped = depth_states(m, tokens);
    m.backbone().reset_schedule();
    BOOST_TEST((skipped.z[0] == full.z[0] && skipped.z[1] == full.z[1]), arch);
    BOOST_TEST((skipped.z[2] == skipped.z[1]), arch << ": z_2 = z_1 when block 1 is skipped");
    BOOST_TEST(max_relative_difference(skipped.z[3], full.z[3]) > 1e-6, arch);
  }
}

namespace {

double worst_gradient_error(Model<double>& model) {
  const auto tokens = tokens_for(model.config());
  model.initialize(3);
  Rng jitter(11);
  for (double& v : model.params().values()) v += 0.1 * jitter.normal();
  model.params().zero_grads();
  const double scale = 1.0 / (kBatch * (kSeq - 1));
  model.forward_backward(tokens.data(), kBatch, kSeq, scale);
  std::vector<double> grads(model.params().grads().begin(), model.params().grads().end());
  auto loss = [&] { return model.forward_loss(tokens.data(), kBatch, kSeq) * scale; };
  const double h = 1e-5;  // noise floor as in model_gradcheck_test.cpp
  const double floor = 16 * std::numeric_limits<double>::epsilon() * std::fabs(loss()) / h / 1e-6;
  double worst = 0;
  for (const ParameterSpec& spec : model.layout().specs()) {
    std::vector<double> x(model.params().values().begin() + spec.offset,
                          model.params().values().begin() + spec.offset + spec.size());
    std::vector<double> g(grads.begin() + spec.offset, grads.begin() + spec.offset + spec.size());
    double* live = model.params().values().data() + spec.offset;
    auto f = [&] {
      std::copy(x.begin(), x.end(), live);
      return loss();
    };
    worst = std::max(worst, test::max_relative_error(f, x, g, 6, h, floor));
    std::copy(x.begin(), x.end(), live);
  }
  return worst;
}

// The reference's config JSON for a Block AttnRes model (the options this test sets).
std::string attnres_block_json(const ModelConfig& c) {
  std::string json = "{\"arch\": \"attnres_block\", \"n_layer\": " + std::to_string(c.n_layer) +
                     ", \"d_model\": " + std::to_string(c.d_model) +
                     ", \"n_head\": " + std::to_string(c.n_head) +
                     ", \"ff\": " + std::to_string(c.ff_dim()) +
                     ", \"vocab_size\": " + std::to_string(c.vocab_size);
  for (const auto& [k, v] : c.design_options) json += ", \"" + k + "\": " + v;
  return json + "}";
}

}  // namespace

BOOST_AUTO_TEST_CASE(block_attnres_with_block_size_above_one_matches_fd_and_pytorch) {
  cpu::set_cpu_threads(1);
  const std::string dir = std::filesystem::temp_directory_path() / "depthbench_stream_design_test";
  std::filesystem::create_directories(dir);
  // S = 2 (4 blocks of 2L = 8 sublayers), S = 3 (the last group stays partial: a source of the
  // readout) and L = 8 with the default 8 blocks (S = 2).
  std::vector<ModelConfig> configs = {tiny("attnres_block", {{"attnres_blocks", "4"}}),
                                      tiny("attnres_block", {{"attnres_block_size", "3"}}),
                                      tiny("attnres_block")};
  configs[2].n_layer = 8;
  for (const ModelConfig& c : configs) {
    Model<double> model(c);
    const double fd = worst_gradient_error(model);
    const std::string label = attnres_block_json(c);
    std::printf("gradcheck %s max rel error %.2e\n", label.c_str(), fd);
    BOOST_TEST(fd < 1e-6, label);

    const auto tokens = tokens_for(c);
    const std::string in = dir + "/weights.h5", out = dir + "/reference.h5";
    {
      H5Handle f = test::create_h5(in);
      test::write_string_attribute(f.get(), "config", label);
      for (const ParameterSpec& s : model.layout().specs()) {
        std::vector<hsize_t> shape(s.shape.begin(), s.shape.end());
        test::write_tensor(f.get(), s.name, shape, model.params().values().data() + s.offset);
      }
      std::vector<int64_t> t(tokens.begin(), tokens.end());
      test::write_tensor(f.get(), "tokens", {kBatch, kSeq}, t.data());
    }
    const std::string command = std::string(DEPTHBENCH_PYTHON) + " " + DEPTHBENCH_SOURCE_DIR +
                                "/tests/reference/depthbench_reference.py run --weights " + in +
                                " --out " + out + " > " + dir + "/reference.log 2>&1";
    BOOST_REQUIRE_MESSAGE(std::system(command.c_str()) == 0, "see " + dir + "/reference.log");
    H5Handle f = test::open_h5(out);
    model.params().zero_grads();
    const double scale = 1.0 / (kBatch * (kSeq - 1));
    const double loss = model.forward_backward(tokens.data(), kBatch, kSeq, scale) * scale;
    double worst = std::fabs(loss - test::read_tensor(f.get(), "loss")[0]) / loss;
    for (const ParameterSpec& s : model.layout().specs()) {
      const auto ours = model.params().grads().subspan(s.offset, s.size());
      worst =
          std::max(worst, max_relative_difference({ours.begin(), ours.end()},
                                                  test::read_tensor(f.get(), "grad/" + s.name)));
    }
    worst = std::max(worst, max_relative_difference(logits_of(model, tokens),
                                                    test::read_tensor(f.get(), "logits")));
    std::printf("pytorch %s float64 %.1e\n", label.c_str(), worst);
    BOOST_TEST(worst < 1e-9, label);
  }
}
