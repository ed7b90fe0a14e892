#include <string>
#include <vector>

#include "ops/cuda/adamw.hpp"
#include "ops/cuda/attention.hpp"
#include "ops/cuda/cross_entropy.hpp"
#include "ops/cuda/cuda_check.hpp"
#include "ops/cuda/device_buffer.hpp"
#include "ops/cuda/elementwise.hpp"
#include "ops/cuda/embedding.hpp"
#include "ops/cuda/gemm.hpp"
#include "ops/cuda/prenorm_step.hpp"
#include "ops/cuda/rmsnorm.hpp"
#include "ops/cuda/rope.hpp"
#include "ops/cuda/swiglu.hpp"

namespace db::cuda {
namespace {
// Parameter offsets are rounded up to 128 elements (256 bytes of fp32, 256 of bf16... at least
// 16-byte aligned for the bf16 copy) so every GEMM operand meets cuBLASLt's best alignment.
constexpr int64_t kAlign = 128;
int64_t round_up(int64_t x) {
  return (x + kAlign - 1) / kAlign * kAlign;
}

struct Block {
  int64_t attn_norm, wq, wk, wv, wo, ffn_norm, w1, w3, w2;
};
}  // namespace

struct PrenormStep::State {
  PrenormShape c;
  int hd = 0, q_width = 0, kv_width = 0;
  int64_t N = 0, total = 0;
  std::vector<Block> blocks;
  int64_t embed = 0, final_norm = 0, lm_head = 0;
  DeviceBuffer<float> values, grads, m, v;
  DeviceBuffer<bf16> values_bf16;
  DeviceBuffer<uint8_t> decay;
  DeviceBuffer<double> norm_sq;
  // Saved activations: residual stream states (2L+1, fp32), per block the normalised inputs,
  // q, k, v (after RoPE), o, lse, FFN a, b, h (bf16), norm statistics (fp32).
  DeviceBuffer<float> xs, rstd_attn, rstd_ffn, rstd_final, lse;
  DeviceBuffer<bf16> u_attn, u_ffn, q, k, v_act, o, a, b, h;
  DeviceBuffer<bf16> features, dfeatures, y, dy, du, d_o, dq, dk, dv, dh, da, db;
  DeviceBuffer<float> dx;
  DeviceBuffer<int32_t> tokens, targets;
  RopeTable rope;
  GemmHandle gemm;
  int64_t steps = 0;
  cudaStream_t stream = nullptr;

  float* val(int64_t off) { return values.data() + off; }
  float* grad(int64_t off) { return grads.data() + off; }
  const bf16* w(int64_t off) { return values_bf16.data() + off; }
};

PrenormStep::PrenormStep(const PrenormShape& shape, uint64_t seed) : s_(std::make_unique<State>()) {
  State& s = *s_;
  s.c = shape;
  const PrenormShape& c = s.c;
  CUDA_REQUIRE(c.d_model % c.n_head == 0, "d_model must be a multiple of n_head");
  s.hd = c.d_model / c.n_head;
  s.q_width = c.n_head * s.hd;
  s.kv_width = c.n_kv_head * s.hd;
  s.N = c.batch * c.seq_len;
  const int64_t d = c.d_model, ff = c.ff, V = c.vocab, L = c.n_layer, N = s.N;

  // --- parameter layout (matrices decay, gains do not) ---
  std::vector<std::pair<int64_t, int64_t>> matrices;  // (offset, size), init N(0, std²)
  std::vector<std::pair<int64_t, int64_t>> gains;     // init 1
  int64_t offset = 0;
  auto add = [&](int64_t size, bool matrix) {
    const int64_t at = offset;
    offset = round_up(offset + size);
    (matrix ? matrices : gains).push_back({at, size});
    return at;
  };
  for (int l = 0; l < L; ++l) {
    Block blk{};
    blk.attn_norm = add(d, false);
    blk.wq = add(s.q_width * d, true);
    blk.wk = add(s.kv_width * d, true);
    blk.wv = add(s.kv_width * d, true);
    blk.wo = add(d * s.q_width, true);
    blk.ffn_norm = add(d, false);
    blk.w1 = add(ff * d, true);
    blk.w3 = add(ff * d, true);
    blk.w2 = add(d * ff, true);
    s.blocks.push_back(blk);
  }
  s.embed = add(V * d, true);
  s.final_norm = add(d, false);
  s.lm_head = add(V * d, true);
  s.total = offset;

  CUDA_CHECK(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
  s.values.resize(s.total);
  s.grads.resize(s.total);
  s.m.resize(s.total);
  s.v.resize(s.total);
  s.values_bf16.resize(s.total);
  s.decay.resize(s.total);
  s.norm_sq.resize(1);
  s.values.zero(s.stream);
  s.m.zero(s.stream);
  s.v.zero(s.stream);
  s.decay.zero(s.stream);
  uint64_t stream_seed = seed;
  for (auto [at, size] : matrices) {
    fill_truncated_normal(s.val(at), size, float(c.init_std), stream_seed++, s.stream);
    CUDA_CHECK(cudaMemsetAsync(s.decay.data() + at, 1, size_t(size), s.stream));
  }
  for (auto [at, size] : gains) fill_constant(s.val(at), size, 1.f, s.stream);
  convert(s.values_bf16.data(), s.values.data(), s.total, s.stream);

  // --- activations ---
  s.xs.resize(size_t(2 * L + 1) * N * d);
  s.rstd_attn.resize(size_t(L) * N);
  s.rstd_ffn.resize(size_t(L) * N);
  s.rstd_final.resize(N);
  s.lse.resize(size_t(L) * N * c.n_head);
  s.u_attn.resize(size_t(L) * N * d);
  s.u_ffn.resize(size_t(L) * N * d);
  s.q.resize(size_t(L) * N * s.q_width);
  s.k.resize(size_t(L) * N * s.kv_width);
  s.v_act.resize(size_t(L) * N * s.kv_width);
  s.o.resize(size_t(L) * N * s.q_width);
  s.a.resize(size_t(L) * N * ff);
  s.b.resize(size_t(L) * N * ff);
  s.h.resize(size_t(L) * N * ff);
  s.features.resize(N * d);
  s.dfeatures.resize(N * d);
  s.y.resize(N * d);
  s.dy.resize(N * d);
  s.du.resize(N * d);
  s.d_o.resize(N * s.q_width);
  s.dq.resize(N * s.q_width);
  s.dk.resize(N * s.kv_width);
  s.dv.resize(N * s.kv_width);
  s.dh.resize(N * ff);
  s.da.resize(N * ff);
  s.db.resize(N * ff);
  s.dx.resize(N * d);
  s.tokens.resize(N);
  s.targets.resize(N);
  s.rope = RopeTable(c.seq_len, s.hd, c.rope_theta);
  CUDA_CHECK(cudaStreamSynchronize(s.stream));
}

PrenormStep::~PrenormStep() {
  if (s_ && s_->stream) cudaStreamDestroy(s_->stream);
}

int64_t PrenormStep::parameter_count() const {
  const PrenormShape& c = s_->c;
  const int64_t d = c.d_model;
  return int64_t(c.n_layer) * (2 * d + d * (2 * s_->q_width + 2 * s_->kv_width) + 3 * d * c.ff) +
         2 * int64_t(c.vocab) * d + d;
}

size_t PrenormStep::allocated_bytes() const {
  const State& s = *s_;
  size_t total = s.values.bytes() * 4 + s.values_bf16.bytes() + s.decay.bytes();
  for (const auto* buffer : {&s.xs, &s.rstd_attn, &s.rstd_ffn, &s.rstd_final, &s.lse, &s.dx})
    total += buffer->bytes();
  for (const auto* buffer :
       {&s.u_attn, &s.u_ffn, &s.q,        &s.k,         &s.v_act, &s.o,  &s.a,
        &s.b,      &s.h,     &s.features, &s.dfeatures, &s.y,     &s.dy, &s.du,
        &s.d_o,    &s.dq,    &s.dk,       &s.dv,        &s.dh,    &s.da, &s.db})
    total += buffer->bytes();
  return total;
}

double PrenormStep::step(const int32_t* host_tokens) {
  State& s = *s_;
  const PrenormShape& c = s.c;
  const int64_t N = s.N, d = c.d_model, ff = c.ff, B = c.batch;
  const int Tn = c.seq_len, L = c.n_layer, H = c.n_head, Hkv = c.n_kv_head;
  const AttentionShape attn{B, Tn, H, Hkv, s.hd};
  cudaStream_t st = s.stream;

  // Next-token targets; the last position of each window has none (−1).
  std::vector<int32_t> targets(N);
  for (int64_t r = 0; r < N; ++r) targets[r] = (r % Tn == Tn - 1) ? -1 : host_tokens[r + 1];
  CUDA_CHECK(cudaMemcpyAsync(s.tokens.data(), host_tokens, N * sizeof(int32_t),
                             cudaMemcpyHostToDevice, st));
  CUDA_CHECK(cudaMemcpyAsync(s.targets.data(), targets.data(), N * sizeof(int32_t),
                             cudaMemcpyHostToDevice, st));
  s.grads.zero(st);

  auto x_state = [&](int i) { return s.xs.data() + int64_t(i) * N * d; };
  // --- forward ---
  embedding_forward(x_state(0), s.tokens.data(), s.val(s.embed), N, int(d), st);
  for (int l = 0; l < L; ++l) {
    const Block& blk = s.blocks[l];
    bf16* u = s.u_attn.data() + l * N * d;
    bf16* q = s.q.data() + l * N * s.q_width;
    bf16* k = s.k.data() + l * N * s.kv_width;
    bf16* v = s.v_act.data() + l * N * s.kv_width;
    bf16* o = s.o.data() + l * N * s.q_width;
    float* lse = s.lse.data() + l * N * H;
    rmsnorm_forward(u, s.rstd_attn.data() + l * N, x_state(2 * l), s.val(blk.attn_norm), N, int(d),
                    c.norm_eps, st);
    linear_forward(s.gemm, q, u, s.w(blk.wq), N, int(d), s.q_width, st);
    linear_forward(s.gemm, k, u, s.w(blk.wk), N, int(d), s.kv_width, st);
    linear_forward(s.gemm, v, u, s.w(blk.wv), N, int(d), s.kv_width, st);
    rope_apply(q, s.rope, B, Tn, H, false, st);
    rope_apply(k, s.rope, B, Tn, Hkv, false, st);
    attention_forward(o, lse, q, k, v, attn, st);
    linear_forward(s.gemm, s.y.data(), o, s.w(blk.wo), N, s.q_width, int(d), st);
    convert(x_state(2 * l + 1), x_state(2 * l), N * d, st);
    add_into(x_state(2 * l + 1), s.y.data(), N * d, st);

    bf16* uf = s.u_ffn.data() + l * N * d;
    bf16* a = s.a.data() + l * N * ff;
    bf16* b = s.b.data() + l * N * ff;
    bf16* h = s.h.data() + l * N * ff;
    rmsnorm_forward(uf, s.rstd_ffn.data() + l * N, x_state(2 * l + 1), s.val(blk.ffn_norm), N,
                    int(d), c.norm_eps, st);
    linear_forward(s.gemm, a, uf, s.w(blk.w1), N, int(d), int(ff), st);
    linear_forward(s.gemm, b, uf, s.w(blk.w3), N, int(d), int(ff), st);
    swiglu_forward(h, a, b, N * ff, st);
    linear_forward(s.gemm, s.y.data(), h, s.w(blk.w2), N, int(ff), int(d), st);
    convert(x_state(2 * l + 2), x_state(2 * l + 1), N * d, st);
    add_into(x_state(2 * l + 2), s.y.data(), N * d, st);
  }
  rmsnorm_forward(s.features.data(), s.rstd_final.data(), x_state(2 * L), s.val(s.final_norm), N,
                  int(d), c.norm_eps, st);
  const int64_t counted = B * (Tn - 1);
  const double loss_sum = lm_head_cross_entropy(
      s.gemm, s.features.data(), s.w(s.lm_head), s.targets.data(), HeadShape{N, int(d), c.vocab},
      s.dfeatures.data(), s.grad(s.lm_head), 1.0 / double(counted), st);

  // --- backward ---
  rmsnorm_backward(s.dx.data(), s.grad(s.final_norm), s.dfeatures.data(), x_state(2 * L),
                   s.val(s.final_norm), s.rstd_final.data(), N, int(d), false, st);
  for (int l = L - 1; l >= 0; --l) {
    const Block& blk = s.blocks[l];
    // FFN sublayer: x' = h + W2(silu(W1 u) ⊙ W3 u), u = N_f(h)
    bf16* uf = s.u_ffn.data() + l * N * d;
    convert(s.dy.data(), s.dx.data(), N * d, st);
    linear_backward(s.gemm, s.dh.data(), s.grad(blk.w2), s.dy.data(), s.h.data() + l * N * ff,
                    s.w(blk.w2), N, int(ff), int(d), false, st);
    swiglu_backward(s.da.data(), s.db.data(), s.dh.data(), s.a.data() + l * N * ff,
                    s.b.data() + l * N * ff, N * ff, st);
    linear_backward(s.gemm, s.du.data(), s.grad(blk.w1), s.da.data(), uf, s.w(blk.w1), N, int(d),
                    int(ff), false, st);
    linear_backward(s.gemm, s.du.data(), s.grad(blk.w3), s.db.data(), uf, s.w(blk.w3), N, int(d),
                    int(ff), true, st);
    rmsnorm_backward(s.dx.data(), s.grad(blk.ffn_norm), s.du.data(), x_state(2 * l + 1),
                     s.val(blk.ffn_norm), s.rstd_ffn.data() + l * N, N, int(d), true, st);
    // Attention sublayer: h = x + Wo·Attn(RoPE(Wq u), RoPE(Wk u), Wv u), u = N_a(x)
    bf16* u = s.u_attn.data() + l * N * d;
    bf16* o = s.o.data() + l * N * s.q_width;
    convert(s.dy.data(), s.dx.data(), N * d, st);
    linear_backward(s.gemm, s.d_o.data(), s.grad(blk.wo), s.dy.data(), o, s.w(blk.wo), N, s.q_width,
                    int(d), false, st);
    attention_backward(s.dq.data(), s.dk.data(), s.dv.data(), s.d_o.data(), o,
                       s.lse.data() + l * N * H, s.q.data() + l * N * s.q_width,
                       s.k.data() + l * N * s.kv_width, s.v_act.data() + l * N * s.kv_width, attn,
                       st);
    rope_apply(s.dq.data(), s.rope, B, Tn, H, true, st);
    rope_apply(s.dk.data(), s.rope, B, Tn, Hkv, true, st);
    linear_backward(s.gemm, s.du.data(), s.grad(blk.wq), s.dq.data(), u, s.w(blk.wq), N, int(d),
                    s.q_width, false, st);
    linear_backward(s.gemm, s.du.data(), s.grad(blk.wk), s.dk.data(), u, s.w(blk.wk), N, int(d),
                    s.kv_width, true, st);
    linear_backward(s.gemm, s.du.data(), s.grad(blk.wv), s.dv.data(), u, s.w(blk.wv), N, int(d),
                    s.kv_width, true, st);
    rmsnorm_backward(s.dx.data(), s.grad(blk.attn_norm), s.du.data(), x_state(2 * l),
                     s.val(blk.attn_norm), s.rstd_attn.data() + l * N, N, int(d), true, st);
  }
  embedding_backward(s.grad(s.embed), s.tokens.data(), s.dx.data(), N, int(d), st);

  // --- global-norm clipping and AdamW, no host round trip ---
  global_norm_squared(s.norm_sq.data(), s.grads.data(), s.total, st);
  AdamWStep step;
  step.lr = c.learning_rate;
  step.beta1 = c.beta1;
  step.beta2 = c.beta2;
  step.eps = c.adam_eps;
  step.weight_decay = c.weight_decay;
  step.step = ++s.steps;
  step.norm_sq = s.norm_sq.data();
  step.grad_clip = c.grad_clip;
  adamw_step(s.values.data(), s.grads.data(), s.m.data(), s.v.data(), s.decay.data(), s.total, step,
             s.values_bf16.data(), st);
  return loss_sum / double(counted);
}

}  // namespace db::cuda
